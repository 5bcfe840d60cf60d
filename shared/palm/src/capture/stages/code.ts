/**
 * Stage 7, code: the feature model's Gabor responses of the ROI (`extractResponses`, ONNX), then
 * the competitive code, its mask and the 1:N signature, packed with the header into a template
 * (`runCode`).
 */
import { encodeTemplate } from '../../template.ts';
import { encodeResponses, MASK_KEEP } from '../coding.ts';
import { sharedExtractor } from '../extractor.ts';

export interface CodeParams {
  /**
   * share of the usable cells kept as reliable by their winner margin (1: all of them) —
   * docs/lab/matcher.md, "Fragile-bit mask (`MASK_KEEP`) and the trusted-share rescaling"
   */
  maskKeep: number;
}

export const DEFAULT_CODE_PARAMS: CodeParams = { maskKeep: MASK_KEEP };

/** The feature model's responses of one ROI crop (the shared ONNX session). */
export async function extractResponses(roi: Float32Array): Promise<Float32Array> {
  const extractor = await sharedExtractor();
  return extractor.responses([roi]);
}

export interface CodeInput {
  /** the responses of `extractResponses` */
  responses: Float32Array;
  /** template cells whose filters read outside the frame (masked), from the ROI stage; null when none */
  outside: Uint8Array | null;
  /** the side the header carries (`unknown` where the side is only a label) */
  hand: 'left' | 'right' | 'unknown';
  /** 0–100, from the quality stage */
  quality: number;
  /** 0–100, from the liveness stage */
  liveness: number;
}

/** The encoded template (version 1). */
export function runCode(input: CodeInput, params: CodeParams = DEFAULT_CODE_PARAMS): Uint8Array {
  const code = encodeResponses(input.responses, 0, params.maskKeep, input.outside ?? undefined);
  return encodeTemplate({
    version: 1,
    hand: input.hand,
    quality: input.quality,
    liveness: input.liveness,
    ...code,
  });
}
