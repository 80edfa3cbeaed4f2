/**
 * URLs as they may be shown: in error messages, `toString`, `util.inspect` and the CLI. A presigned
 * or tokened URL is a credential (an S3 presigned URL is valid for an hour); what identifies the
 * object (the origin and the path) stays, and so do the names of the query's parameters.
 */

/** What a redacted value is replaced with. */
const REDACTED = '[redacted]';

/**
 * Query (and fragment) parameters whose value is a secret, by name: AWS (`X-Amz-Credential`,
 * `X-Amz-Signature`, `X-Amz-Security-Token`), GCS (`X-Goog-Credential`, `X-Goog-Signature`), Azure
 * SAS (`sig`, and `se`/`st`/`skoid`…: the whole SAS is one credential), CloudFront (`Signature`,
 * `Policy`, `Key-Pair-Id`), and anything named like a token, key, secret, password or session.
 */
const SECRET_NAME =
  /sig|token|key|secret|credential|passw|pwd|auth|session|policy|jwt|bearer|cookie|hmac|^code$|^se$|^st$|^sv$|^sp$|^sr$|^ss$|^srt$|^spr$|^sip$|^skt$|^ske$|^sks$|^skv$|^sdd$|^ses$|^si$|^otp$/i;

/**
 * A value that looks like a credential whatever its parameter's name: 24 or more characters of the
 * alphabets tokens are written in (base64, hex, JWTs). Dates, sizes, ids and words stay shown.
 */
const OPAQUE_VALUE = /^[A-Za-z0-9+/=_%.~-]{24,}$/;

/** Characters that end a URL in running text (space, quotes, angle brackets). */
const URL_IN_TEXT = /\b[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s'"`<>]+/g;

/** `a=1&b=2` with every secret value replaced. */
function redactParams(params: string): string {
  return params
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return OPAQUE_VALUE.test(pair) ? REDACTED : pair;
      const rawName = pair.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // a malformed escape: the name as written
      }
      const value = pair.slice(eq + 1);
      return value !== '' && (SECRET_NAME.test(name) || OPAQUE_VALUE.test(value)) ? `${rawName}=${REDACTED}` : pair;
    })
    .join('&');
}

/** One URL with its user info and its query's (and fragment's) secrets replaced. */
function redactOne(url: string): string {
  // Trailing punctuation of the sentence around it is not part of the URL.
  const tail = /[.,;:!?)]+$/.exec(url)?.[0] ?? '';
  let core = tail ? url.slice(0, -tail.length) : url;
  // user:password@ before the host
  core = core.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^/?#@]*@/, `$1${REDACTED}@`);
  const hash = core.indexOf('#');
  let fragment = '';
  if (hash >= 0) {
    fragment = `#${redactParams(core.slice(hash + 1))}`;
    core = core.slice(0, hash);
  }
  const query = core.indexOf('?');
  if (query >= 0) core = `${core.slice(0, query)}?${redactParams(core.slice(query + 1))}`;
  return core + fragment + tail;
}

/**
 * `text` with every URL in it shown without its credentials: the value of each query or fragment
 * parameter named like a secret (AWS, GCS and Azure signatures, `token`, `key`, `sig`, …) or that
 * looks like one (a long opaque string) becomes `[redacted]`, and so does user info; the origin, the
 * path and the parameters' names stay, so the object can still be recognised. The one function
 * every message, name and printout that may hold a URL goes through.
 * @example
 * redactUrls('https://b.s3.amazonaws.com/x.npz?X-Amz-Expires=300&X-Amz-Signature=9f0c…');
 * // 'https://b.s3.amazonaws.com/x.npz?X-Amz-Expires=300&X-Amz-Signature=[redacted]'
 */
export function redactUrls(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(URL_IN_TEXT, (url) => (/[?#@]/.test(url) ? redactOne(url) : url));
}

/**
 * Whether `url` carries credentials of its own: user info, or a query or fragment parameter that
 * {@link redactUrls} hides (named like a signature or token: `X-Amz-Signature`, `X-Goog-Signature`,
 * `Signature`, `sig`, `token`, …, or holding a long opaque value). What tells a presigned (or
 * otherwise signed) URL from a plain one: the same rule as redaction, so that what is hidden as a
 * secret is what is called a signature.
 * @example
 * carriesCredentials('https://b.s3.amazonaws.com/x.npz?X-Amz-Signature=9f0c');   // true
 * carriesCredentials('https://h/models/model.safetensors.index.json');              // false
 */
export function carriesCredentials(url: string): boolean {
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(url) && /[?#@]/.test(url) && redactOne(url) !== url;
}
