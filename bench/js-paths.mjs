// `node js-paths.mjs DIR REPEATS` (run by run.mjs with NPYTS_NATIVE=0): the native-sensitive cases on
// the JavaScript paths alone, as JSON.
import { nativeStatus } from '@npyts/core/node';
import { nativeSensitiveCases } from './timing.mjs';

const [dir, repeats] = process.argv.slice(2);
if (nativeStatus().loaded) throw new Error('js-paths.mjs must run with NPYTS_NATIVE=0');
console.log(JSON.stringify(nativeSensitiveCases(dir, Number(repeats))));
