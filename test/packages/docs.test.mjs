// Every public symbol of the packages is documented: functions, classes and constants with an
// @example, types and interfaces with a description (doc-coverage.mjs lists what is missing).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { undocumented } from './doc-coverage.mjs';

test('every exported function, class and constant has TSDoc with an @example; every type a description', () => {
  const missing = undocumented().map(([entry, name, what, where]) => `${name}: ${what} (${where}, exported by ${entry})`);
  assert.equal(missing, []);
});

test.run();
