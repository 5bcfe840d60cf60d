import { readImage } from '@palmid/palm/capture/image-io';
import { extractRoiTemplates } from '@palmid/palm/capture/roi-template';
import type { SensorName } from '@palmid/palm/capture/sensor-profiles';
import { extractCapture, extractTemplate } from '../template-file.ts';
import { baselineTemplate } from './baseline.ts';
import { type Extract, extractionFailure } from './evaluate.ts';

/**
 * How `palm eval` (and `palm look-alike`, `calibrate-threshold --sensor`) codes one image with palmid:
 * a cropped palm with `roi` (with `rotations` beyond 0°, the probe variants too), else a whole frame
 * through the kiosk pipeline under `sensor`, with the side it decided. A refusal is a failure to
 * acquire (`{reason}`), anything else throws.
 */
export function palmExtract(o: {
  roi?: boolean | undefined;
  rotations?: readonly number[] | undefined;
  sensor?: SensorName | undefined;
}): Extract {
  return async (file) => {
    try {
      if (o.roi && o.rotations && o.rotations.length > 1) {
        const [template, ...variants] = await extractRoiTemplates(await readImage(file), o.rotations);
        return { template: template!, variants };
      }
      return o.roi ? { template: await extractTemplate(file, true) } : await extractCapture(file, o.sensor);
    } catch (err) {
      return extractionFailure(err);
    }
  };
}

/** The CompCode baseline's code of a cropped palm (`--baseline`); a refusal is a failure to acquire. */
export const baselineExtract: Extract = async (file) => {
  try {
    return { template: baselineTemplate(await readImage(file)) };
  } catch (err) {
    return extractionFailure(err);
  }
};
