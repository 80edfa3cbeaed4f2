// datetime64 as text and as Date: datetimeText is numpy's np.datetime_as_string in the value's own
// unit, for random counts of every unit and multiplier (asked of numpy, in one batch); parseDatetimeText
// is its exact inverse; datetimeToDate is exact or refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { NOT_A_TIME, datetimeText, datetimeToDate, parseDatetimeText } from '@npyts/core';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { python, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const UNITS = ['Y', 'M', 'W', 'D', 'h', 'm', 's', 'ms', 'us', 'ns', 'ps', 'fs', 'as'];
// Counts within numpy's range for each unit (numpy refuses to print years past ±2^63 days' reach).
const count = fc.oneof(fc.bigInt({ min: -(10n ** 6n), max: 10n ** 6n }), fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }), fc.constantFrom(0n, -1n, 1n));
const cases = fc.sample(fc.tuple(fc.constantFrom(...UNITS), fc.constantFrom(1, 1, 1, 2, 7, 25), count), { numRuns: 3000, seed: 7 });
// Years numpy can print: keep counts whose years stay within its calendar's range.
// numpy computes count × multiplier in int64 and wraps past it without a word (its bug: 2^62 × 7fs
// prints a date in 1969); npyts gives the true date there, so those counts are left out here.
const kept = cases.filter(([unit, k, n]) => {
  if (n * BigInt(k) >= 2n ** 63n || n * BigInt(k) < -(2n ** 63n)) return false;
  const scale = { Y: 1n, M: 12n, W: 52n, D: 365n, h: 8760n, m: 525600n, s: 31536000n }[unit] ?? 31536000n * 10n ** 3n;
  return (n * BigInt(k)) / scale < 10n ** 9n && (n * BigInt(k)) / scale > -(10n ** 9n);
});

test('datetimeText equals np.datetime_as_string for every unit and multiplier, and parseDatetimeText reads it back', () => {
  const file = join(scratch('npyts-datetime-'), 'cases.json');
  writeFileSync(file, JSON.stringify(kept.map(([u, k, n]) => [u, k, String(n)])));
  const out = JSON.parse(
    python(`cases = json.load(open(${JSON.stringify(file)}))
print(json.dumps([str(np.datetime_as_string(np.array([int(n)], 'i8').view(f'M8[{k if k != 1 else ""}{u}]'))[0]) for u, k, n in cases]))`),
  );
  assert.ok(kept.length > 1000, `${kept.length} cases`);
  kept.forEach(([unit, k, n], i) => {
    const text = datetimeText(n, unit, k);
    assert.is(text, out[i], `${n} × ${k}${unit}`);
    assert.is(parseDatetimeText(text, unit, k), n, text);
  });
  assert.is(datetimeText(NOT_A_TIME, 'D'), 'NaT');
  assert.is(parseDatetimeText('NaT', 'ns'), NOT_A_TIME);
});

test("numpy's own bug: datetime_as_string reads big-endian values unswapped (the fixtures make them native first)", () => {
  const [big, native] = JSON.parse(
    python(`a = np.array([1], '>i8').view('>M8[D]'); print(json.dumps([str(np.datetime_as_string(a)[0]), str(np.datetime_as_string(a.astype('<M8[D]'))[0])]))`),
  );
  assert.is(native, datetimeText(1n, 'D'));
  // When numpy fixes this, the workaround in test/helpers/npyfixtures.py and the CLI tests can go.
  assert.is.not(big, native, 'numpy now prints big-endian datetimes right');
});

test("numpy's own bug: count × multiplier wraps past int64 without a word; npyts gives the true date", () => {
  const n = 2n ** 62n;
  const wrapped = python(`print(np.datetime_as_string(np.array([${n}], 'i8').view('M8[7fs]'))[0])`).trim();
  const ours = datetimeText(n, 'fs', 7);
  // 2^62 × 7 fs is about 32 283 s after the epoch: 1970-01-01T08:58:…
  assert.ok(ours.startsWith('1970-01-01T08:58:'), ours);
  assert.is.not(wrapped, ours, 'numpy no longer wraps: the filter in the first test can go');
});

test("numpy's own bug: near the int64 ends its calendar arithmetic wraps (1970 + years, weeks × 7, days − 10957); npyts gives the true date and reads it back", () => {
  // Issue 53 found these printed differently from numpy: numpy computes them in int64 and wraps
  // without a word (the year of M8[Y] 2^63 − 1 comes out negative; one past it is NaT).
  const M = 2n ** 63n - 1n;
  const cases = [
    ['Y', M],
    ['Y', M - 1969n],
    ['W', M],
    ['W', -(M / 7n) - 1n],
    ['D', -M],
  ];
  const theirs = JSON.parse(
    python(
      `print(json.dumps([str(np.array([n], 'i8').view(f'M8[{u}]')[0]) for u, n in ${JSON.stringify(cases.map(([u, n]) => [u, String(n)])).replace(/"(-?\d+)"/g, '$1')}]))`,
    ),
  );
  cases.forEach(([unit, n], i) => {
    const ours = datetimeText(n, unit);
    assert.is(parseDatetimeText(ours, unit), n, ours);
    assert.is.not(theirs[i], ours, `numpy no longer wraps ${n} ${unit}: print as it does (${theirs[i]})`);
  });
  // The true years: 1970 + (2^63 − 1) for M8[Y]; weeks and days far past year 10^16 either way.
  assert.is(datetimeText(M, 'Y'), String(1970n + M));
  assert.ok(datetimeText(-M, 'D').startsWith('-25252734927764585-'), datetimeText(-M, 'D'));
});

test("texts that are not the unit's own form are refused, never rounded", async () => {
  for (const [text, unit, k] of [
    ['2024-02-30', 'D', 1],
    ['2023-02-29', 'D', 1],
    ['2024-02-29', 's', 1],
    ['2024-02-29T00:00:00.5', 'ms', 1],
    ['2024-02-29T24:00:00', 's', 1],
    ['24-02-29', 'D', 1],
    ['1970-01-02', 'W', 1],
    ['1970-01-02', 'D', 2],
    ['2024', 'M', 1],
    [`${'9'.repeat(100000)}-01-01`, 'D', 1], // refused by its length, before any arithmetic on it
  ]) {
    const e = await npyErrorOf(() => parseDatetimeText(text, unit, k));
    assert.is(e.code, 'BAD_VALUE', text);
  }
});

test('datetimeToDate: exact where a Date holds the value, NOT_REPRESENTABLE where it would round or overflow', async () => {
  const ms = JSON.parse(
    python(`print(json.dumps([int(x) for x in np.array(['2024-02-29T12:34:56.789', '1969-12-31T23:59:59.999', '-0100-03-01'], 'M8[ms]').astype('i8')]))`),
  );
  assert.is(datetimeToDate(BigInt(ms[0]), 'ms').toISOString(), '2024-02-29T12:34:56.789Z');
  assert.is(datetimeToDate(BigInt(ms[1]) * 1000n, 'us').getTime(), ms[1]);
  assert.is(datetimeToDate(BigInt(ms[2]), 'ms').getTime(), ms[2]);
  assert.is(datetimeToDate(19782n, 'D').toISOString(), '2024-02-29T00:00:00.000Z');
  assert.is(datetimeToDate(54n, 'Y').toISOString(), '2024-01-01T00:00:00.000Z');
  assert.is(datetimeToDate(650n, 'M').toISOString(), '2024-03-01T00:00:00.000Z');
  assert.ok(Number.isNaN(datetimeToDate(NOT_A_TIME, 's').getTime()));
  assert.is((await npyErrorOf(() => datetimeToDate(1n, 'us'))).code, 'NOT_REPRESENTABLE');
  assert.is((await npyErrorOf(() => datetimeToDate(10n ** 15n, 's'))).code, 'NOT_REPRESENTABLE');
});

test.run();
