import { fileURLToPath } from 'node:url';

/** The feature model shipped with this package (shared/palm/models), resolved from here, any cwd. */
export const DEFAULT_MODEL_PATH = fileURLToPath(new URL('../../models/palm-features.onnx', import.meta.url));
