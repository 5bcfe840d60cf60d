/** Regenerates agent/models/palm-features.onnx from the filter bank in agent/src/palm/gabor.ts. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildFeatureModel } from '../src/palm/model-graph.ts';

const target = fileURLToPath(new URL('../models/palm-features.onnx', import.meta.url));
const bytes = buildFeatureModel();
writeFileSync(target, bytes);
console.log(`wrote ${target} (${bytes.length} bytes)`);
