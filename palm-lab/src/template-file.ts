import { AppError } from '@palmid/contracts/errors';
import { readImage } from '@palmid/palm/capture/image-io';
import { type CaptureHand, processCapture } from '@palmid/palm/capture/pipeline';
import { extractRoiTemplate } from '@palmid/palm/capture/roi-template';
import type { SensorName } from '@palmid/palm/capture/sensor-profiles';

/**
 * The template of an image file: a whole-hand frame through the kiosk pipeline, or with `roi` an
 * already-cropped palm. A refused capture is an AppError whose `details.reason` is the pipeline's
 * reason (`partial`, `blurred`, `liveness_failed`…). Whole frames are read under the default
 * sensor profile; `extractCapture` takes another.
 */
export async function extractTemplate(path: string, roi: boolean): Promise<Uint8Array> {
  if (roi) return extractRoiTemplate(await readImage(path));
  return (await extractCapture(path)).template;
}

/**
 * A whole-hand frame through the kiosk pipeline: its template and the side the capture decided
 * (`unknown` when none; camera templates leave the side out of their header, pipeline.ts). A
 * refused capture throws as in `extractTemplate`.
 */
export async function extractCapture(
  path: string,
  sensor?: SensorName,
): Promise<{ template: Uint8Array; hand: CaptureHand }> {
  const r = await processCapture(await readImage(path), sensor ? { sensor } : {});
  if (!r.ok)
    throw new AppError('INVALID_REQUEST', `${path}: ${r.message} (${r.reason})`, {
      field: 'image',
      reason: r.reason,
    });
  return { template: r.template, hand: r.hand };
}
