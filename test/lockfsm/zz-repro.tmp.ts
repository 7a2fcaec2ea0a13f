import { Workload } from './workload.js';
const steps = JSON.parse(process.argv[2]!);
const w = new Workload(false);
try { w.run(steps); console.log('passed'); } catch (e) { console.log(String(e)); for (const l of w.log) console.log(l.index, JSON.stringify(l.cmd), JSON.stringify(l.applied)); }
