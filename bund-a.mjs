import { openWeights } from '@npyts/core';
const w = await openWeights(new Blob([]));
console.log(await w.get('x'));
