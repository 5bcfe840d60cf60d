import { AppError } from '@palmid/shared/errors.ts';
import { readImage } from './image-io.ts';
import { processCapture } from './pipeline.ts';
import { extractRoiTemplate } from './roi-template.ts';
import type { SensorName } from './sensor-profiles.ts';

/**
 * The template of an image file: a whole-hand frame through the kiosk pipeline, or with `roi` an
 * already-cropped palm. A refused capture is an AppError whose `details.reason` is the pipeline's
 * reason (`partial`, `blurred`, `liveness_failed`…). `sensor` is the capture's sensor profile.
 */
export async function extractTemplate(path: string, roi: boolean, sensor?: SensorName): Promise<Uint8Array> {
  const image = await readImage(path);
  if (roi) return extractRoiTemplate(image);
  const r = await processCapture(image, sensor ? { sensor } : {});
  if (!r.ok)
    throw new AppError('INVALID_REQUEST', `${path}: ${r.message} (${r.reason})`, {
      field: 'image',
      reason: r.reason,
    });
  return r.template;
}
