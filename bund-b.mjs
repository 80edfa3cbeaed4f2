import { openSafetensors } from '@npyts/core';
const w = await openSafetensors(new Blob([]));
console.log(await w.get('x'));
