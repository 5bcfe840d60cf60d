/** Regenerates shared/palm/models/palm-features.onnx from the filter bank in shared/palm/src/capture/gabor.ts. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildFeatureModel } from '../src/capture/model-graph.ts';

const target = fileURLToPath(new URL('../models/palm-features.onnx', import.meta.url));
const bytes = buildFeatureModel();
writeFileSync(target, bytes);
console.log(`wrote ${target} (${bytes.length} bytes)`);
