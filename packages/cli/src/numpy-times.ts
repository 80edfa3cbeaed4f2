/**
 * numpy's text for datetime64 values (`np.datetime_as_string` at the dtype's own unit): the
 * proleptic Gregorian calendar, years of any size, in exact integer arithmetic.
 */
import type { DatetimeUnit } from '@npyts/core';

/** Each unit below a day, as its count per day and the digits it adds after the date. */
const BELOW_DAY: Partial<Record<DatetimeUnit, { perDay: bigint; clock: number; fraction: number }>> = {
  h: { perDay: 24n, clock: 1, fraction: 0 },
  m: { perDay: 1440n, clock: 2, fraction: 0 },
  s: { perDay: 86400n, clock: 3, fraction: 0 },
  ms: { perDay: 86400n * 10n ** 3n, clock: 3, fraction: 3 },
  us: { perDay: 86400n * 10n ** 6n, clock: 3, fraction: 6 },
  ns: { perDay: 86400n * 10n ** 9n, clock: 3, fraction: 9 },
  ps: { perDay: 86400n * 10n ** 12n, clock: 3, fraction: 12 },
  fs: { perDay: 86400n * 10n ** 15n, clock: 3, fraction: 15 },
  as: { perDay: 86400n * 10n ** 18n, clock: 3, fraction: 18 },
};

/** Floor division and its non-negative remainder. */
function floorDiv(a: bigint, b: bigint): [bigint, bigint] {
  let q = a / b;
  let r = a % b;
  if (r < 0n) {
    q -= 1n;
    r += b;
  }
  return [q, r];
}

/** Year, month and day of a count of days since 1970-01-01 (Hinnant's civil_from_days). */
function civilFromDays(days: bigint): [bigint, number, number] {
  const z = days + 719468n;
  const [era, doe] = floorDiv(z, 146097n);
  const yoe = (doe - doe / 1460n + doe / 36524n - doe / 146096n) / 365n;
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n);
  const mp = (5n * doy + 2n) / 153n;
  const day = Number(doy - (153n * mp + 2n) / 5n + 1n);
  const month = Number(mp < 10n ? mp + 3n : mp - 9n);
  return [yoe + era * 400n + (month <= 2 ? 1n : 0n), month, day];
}

/** C's `%04lld`, which numpy uses for years: at least four characters, the sign counted. */
function yearText(year: bigint): string {
  return year < 0n ? `-${(-year).toString().padStart(3, '0')}` : year.toString().padStart(4, '0');
}

const two = (n: number | bigint): string => n.toString().padStart(2, '0');

/** ISO 8601 text of `count` units of `multiplier`·`unit` since the epoch, as numpy prints it. */
export function datetimeText(count: bigint, unit: DatetimeUnit, multiplier: number): string {
  const v = count * BigInt(multiplier);
  if (unit === 'Y') return yearText(1970n + v);
  if (unit === 'M') {
    const [years, month] = floorDiv(v, 12n);
    return `${yearText(1970n + years)}-${two(month + 1n)}`;
  }
  const date = (days: bigint): string => {
    const [y, m, d] = civilFromDays(days);
    return `${yearText(y)}-${two(m)}-${two(d)}`;
  };
  if (unit === 'W') return date(v * 7n);
  if (unit === 'D') return date(v);
  const below = BELOW_DAY[unit];
  if (!below) throw new Error(`no text for datetime unit '${unit}'`);
  const [days, inDay] = floorDiv(v, below.perDay);
  // The part of the day in this unit's count, split into hours, minutes, seconds and a fraction.
  const fractionScale = 10n ** BigInt(below.fraction);
  const [clockCount, fraction] = floorDiv(inDay, fractionScale);
  const clockPerDay = below.perDay / fractionScale;
  const secondsInDay = clockCount * (86400n / clockPerDay);
  const fields = [secondsInDay / 3600n, (secondsInDay / 60n) % 60n, secondsInDay % 60n].slice(0, below.clock).map(two);
  const frac = below.fraction ? `.${fraction.toString().padStart(below.fraction, '0')}` : '';
  return `${date(days)}T${fields.join(':')}${frac}`;
}
