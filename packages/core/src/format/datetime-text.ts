/**
 * datetime64 values as text and as JavaScript dates: ISO 8601 exactly as numpy's
 * `np.datetime_as_string` writes it in the value's own unit (lossless: every count has one text and
 * back), and `Date` where a value is a whole number of milliseconds a `Date` can hold.
 */
import { NpyError } from '../errors.js';
import type { DatetimeUnit } from './dtype.js';

/**
 * The NaT sentinel of datetime64/timedelta64 counts (numpy's int64 minimum).
 * @example
 * createArray('<M8[s]', [1]).data[0] === NOT_A_TIME;   // false: zero-filled, 1970-01-01
 */
export const NOT_A_TIME = -(2n ** 63n);
const NAT = NOT_A_TIME;

/** How many of each sub-day unit a day holds. */
const PER_DAY: Partial<Record<DatetimeUnit, bigint>> = {
  D: 1n,
  h: 24n,
  m: 1440n,
  s: 86_400n,
  ms: 86_400_000n,
  us: 86_400_000_000n,
  ns: 86_400_000_000_000n,
  ps: 86_400_000_000_000_000n,
  fs: 86_400_000_000_000_000_000n,
  as: 86_400_000_000_000_000_000_000n,
};

/** Digits after the seconds' point, by unit. */
const FRACTION_DIGITS: Partial<Record<DatetimeUnit, number>> = { ms: 3, us: 6, ns: 9, ps: 12, fs: 15, as: 18 };

/** `a` divided by `b`, rounded toward negative infinity, and the remainder (0 ≤ r < b). */
function floorDivMod(a: bigint, b: bigint): [bigint, bigint] {
  const q = a / b;
  const r = a % b;
  return r < 0n ? [q - 1n, r + b] : [q, r];
}

/** Year, month (1–12) and day of the day `days` after 1970-01-01 (proleptic Gregorian, H. Hinnant's civil_from_days). */
function civilFromDays(days: bigint): [bigint, number, number] {
  const z = days + 719_468n;
  const [era] = floorDivMod(z, 146_097n);
  const doe = z - era * 146_097n;
  const yoe = (doe - doe / 1460n + doe / 36_524n - doe / 146_096n) / 365n;
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n);
  const mp = (5n * doy + 2n) / 153n;
  const day = Number(doy - (153n * mp + 2n) / 5n + 1n);
  const month = Number(mp < 10n ? mp + 3n : mp - 9n);
  return [yoe + era * 400n + (month <= 2 ? 1n : 0n), month, day];
}

/** Days from 1970-01-01 to the given civil date (the inverse of {@link civilFromDays}). */
function daysFromCivil(year: bigint, month: number, day: number): bigint {
  const y = month <= 2 ? year - 1n : year;
  const [era] = floorDivMod(y, 400n);
  const yoe = y - era * 400n;
  const m = BigInt(month);
  const doy = (153n * (m > 2n ? m - 3n : m + 9n) + 2n) / 5n + BigInt(day) - 1n;
  const doe = yoe * 365n + yoe / 4n - yoe / 100n + doy;
  return era * 146_097n + doe - 719_468n;
}

/** A year as numpy prints it (C's `%04d`: the sign counts toward the width). */
function yearText(year: bigint): string {
  return year < 0n ? `-${String(-year).padStart(3, '0')}` : String(year).padStart(4, '0');
}

const two = (n: bigint | number): string => String(n).padStart(2, '0');

/**
 * A datetime64 count as numpy's `np.datetime_as_string` writes it, in the value's own unit:
 * `'2024-02-29'` for `M8[D]`, `'2024-02-29T12:00:00.250'` for `M8[ms]`, `'NaT'` for NaT.
 * @example
 * datetimeText(19782n, 'D');   // '2024-02-29'
 */
export function datetimeText(count: bigint, unit: DatetimeUnit, multiplier = 1): string {
  if (count === NAT) return 'NaT';
  if (unit === '') throw new NpyError('NOT_REPRESENTABLE', 'a generic datetime64 (no unit) has no date; only NaT is one');
  const n = count * BigInt(multiplier);
  if (unit === 'Y') return yearText(1970n + n);
  if (unit === 'M') {
    const [years, month] = floorDivMod(n, 12n);
    return `${yearText(1970n + years)}-${two(month + 1n)}`;
  }
  const perDay = PER_DAY[unit === 'W' ? 'D' : unit]!;
  const [days, rest] = floorDivMod(unit === 'W' ? n * 7n : n, perDay);
  const [year, month, day] = civilFromDays(days);
  let text = `${yearText(year)}-${two(month)}-${two(day)}`;
  if (unit === 'D' || unit === 'W') return text;
  // The part of the day, in the unit: hours, then minutes, seconds and the fraction as the unit has them.
  const perHour = perDay / 24n;
  const [hour, inHour] = floorDivMod(rest, perHour);
  text += `T${two(hour)}`;
  if (unit === 'h') return text;
  const perMinute = perHour / 60n;
  const [minute, inMinute] = floorDivMod(inHour, perMinute);
  text += `:${two(minute)}`;
  if (unit === 'm') return text;
  const perSecond = perMinute / 60n;
  const [second, fraction] = floorDivMod(inMinute, perSecond);
  text += `:${two(second)}`;
  const digits = FRACTION_DIGITS[unit];
  return digits ? `${text}.${String(fraction).padStart(digits, '0')}` : text;
}

/** The shape of each unit's text: what {@link parseDatetimeText} takes back, exactly. */
const TEXT_FORM = /^(-?\d{3,})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2})(?::(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?)?)?)?$/;

/**
 * The count of a datetime64 text in `unit`: the exact inverse of {@link datetimeText} (the text must
 * be the one numpy writes for that unit; anything else is refused, never rounded).
 * @example
 * parseDatetimeText('2024-02-29', 'D');   // 19782n
 */
export function parseDatetimeText(text: string, unit: DatetimeUnit, multiplier = 1): bigint {
  if (text === 'NaT') return NAT;
  const refuse = (why: string): never => {
    throw new NpyError('BAD_VALUE', `'${text}' is not a datetime64[${multiplier === 1 ? '' : multiplier}${unit}] as numpy writes it (${why})`);
  };
  if (unit === '') refuse('a generic datetime64 holds only NaT');
  const m = TEXT_FORM.exec(text);
  if (!m) refuse(`expected ${datetimeText(0n, unit)}'s form`);
  const [, y, mo, d, h, mi, s, f] = m!;
  // No int64 count reaches a year of more than 20 digits; a longer one is refused before any arithmetic.
  if (y!.length > 21) refuse('a year past any int64 count');
  const year = BigInt(y!);
  if (yearText(year) !== y) refuse('a year as numpy pads it');
  // Every field the unit has, and no other: the text is the one numpy writes for this unit.
  const parts = [mo, d, h, mi, s].filter((x) => x !== undefined).length + (f === undefined ? 0 : 1);
  const wanted = { Y: 0, M: 1, W: 2, D: 2, h: 3, m: 4, s: 5 }[unit as 'Y'] ?? 6;
  if (parts !== wanted || (f !== undefined && f.length !== FRACTION_DIGITS[unit])) refuse(`the fields of unit '${unit}'`);
  let count: bigint;
  if (unit === 'Y') count = year - 1970n;
  else if (unit === 'M') count = (year - 1970n) * 12n + BigInt(Number(mo) - 1);
  else {
    const month = Number(mo);
    const day = Number(d);
    const days = daysFromCivil(year, month, day);
    if (month < 1 || month > 12 || day < 1 || civilFromDays(days).join() !== [year, month, day].join()) refuse('no such date');
    if (unit === 'W') {
      const [weeks, off] = floorDivMod(days, 7n);
      if (off !== 0n) refuse('not the first day of a week since 1970-01-01');
      count = weeks;
    } else {
      const perDay = PER_DAY[unit]!;
      const [hour, minute, second] = [h, mi, s].map((x) => BigInt(x ?? 0));
      if (hour! > 23n || minute! > 59n || second! > 59n) refuse('a time past the end of its day');
      const perSecond = perDay / 86_400n || 1n;
      const seconds = hour! * 3600n + minute! * 60n + second!;
      const inDay = perDay >= 86_400n ? seconds * perSecond + BigInt(f ?? 0) : seconds / (86_400n / perDay);
      count = days * perDay + inDay;
    }
  }
  const k = BigInt(multiplier);
  if (count % k !== 0n) refuse(`not a multiple of ${multiplier}${unit}`);
  count /= k;
  if (count <= NAT || count >= 2n ** 63n) refuse('outside the int64 range');
  return count;
}

/** Milliseconds of one count of each unit that a `Date` can hold whole. */
const MS_PER: Partial<Record<DatetimeUnit, bigint>> = { W: 604_800_000n, D: 86_400_000n, h: 3_600_000n, m: 60_000n, s: 1000n, ms: 1n };

/**
 * A datetime64 count as a `Date`, exactly: refused (NOT_REPRESENTABLE) where the value is not a
 * whole number of milliseconds or lies outside a `Date`'s ±8.64e15 ms; NaT is an invalid Date.
 * Years and months go through their first day.
 * @example
 * datetimeToDate(19782n, 'D').toISOString();   // '2024-02-29T00:00:00.000Z'
 */
export function datetimeToDate(count: bigint, unit: DatetimeUnit, multiplier = 1): Date {
  if (count === NAT) return new Date(Number.NaN);
  let ms: bigint;
  if (unit === 'Y' || unit === 'M') {
    // The first day of the year or month.
    const [years, month] = unit === 'Y' ? [count * BigInt(multiplier), 0n] : floorDivMod(count * BigInt(multiplier), 12n);
    ms = daysFromCivil(1970n + years, Number(month) + 1, 1) * 86_400_000n;
  } else if (MS_PER[unit] !== undefined) ms = count * BigInt(multiplier) * MS_PER[unit]!;
  else {
    const perMs = PER_DAY[unit]! / 86_400_000n;
    const n = count * BigInt(multiplier);
    if (n % perMs !== 0n) {
      throw new NpyError(
        'NOT_REPRESENTABLE',
        `${datetimeText(count, unit, multiplier)} is not a whole number of milliseconds, which a Date holds; use datetimeText`,
      );
    }
    ms = n / perMs;
  }
  if (ms > 8_640_000_000_000_000n || ms < -8_640_000_000_000_000n) {
    throw new NpyError('NOT_REPRESENTABLE', `${datetimeText(count, unit, multiplier)} is outside the range of a Date (±275 760 years); use datetimeText`);
  }
  return new Date(Number(ms));
}
