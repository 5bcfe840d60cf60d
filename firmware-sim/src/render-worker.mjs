// Renders synthetic palms off the simulator's event loop: the renderer takes up to a second of CPU
// per new hand, and real firmware keeps answering the host while its sensor is busy.
import { parentPort } from 'node:worker_threads';

async function loadRenderer() {
  // Loader hooks from the parent (tsx, vitest) do not reach a worker: register tsx's here.
  const { register } = await import('tsx/esm/api');
  register();
  return import('./synth/index.ts');
}

const { renderPalm } = await loadRenderer();
parentPort.postMessage({ ready: true });

parentPort.on('message', async ({ id, spec }) => {
  try {
    const frame = await renderPalm(spec);
    const data = new Uint8Array(frame.data);
    parentPort.postMessage({ id, width: frame.width, height: frame.height, data }, [data.buffer]);
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
