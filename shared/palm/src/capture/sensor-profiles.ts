/**
 * Sensor profiles: what the capture pipeline may assume about the camera in front of it. A profile
 * sets the quality limits and, above all, which presentation-attack (liveness) cues apply: a cue a
 * sensor cannot support (vein contrast under visible light, the NIR fall-off at the outline of a
 * hand pressed on a platen) would only refuse bona fide hands. See docs/palm-pipeline.md
 * ("Sensor profiles") for how each value was chosen and what each profile detects.
 */

import { SENSOR_NAMES, type SensorName } from '@palmid/contracts/capture/sensors';
import { InvalidArgumentError } from 'commander';
import { PEG_MASK_LEVEL } from './roi-pegs.ts';
import { type CaptureStages, captureStages, geometryStages } from './stages/index.ts';
import { type CueCentres, type LivenessCue, SIMULATOR_CENTRES } from './stages/liveness.ts';
import { DEFAULT_QUALITY_PARAMS, type QualityLimits } from './stages/quality.ts';
import { mirrorsLeft, type RoiProportions, SIMULATOR_ROI } from './stages/roi.ts';

export type { CaptureStages, LivenessCue, QualityLimits };

export interface SensorProfile {
  name: SensorName;
  /** one line for `agent config` help */
  summary: string;
  /** honest statement of the presentation attacks this profile detects (and those it does not) */
  detects: string;
  /**
   * The parameters of every capture stage on this sensor (stages/index.ts): above all its ROI
   * proportions (`roi.proportions`), whether the hand is darker than the background
   * (`detect.darkHand`), its quality limits (`quality`) and the liveness cues it supports with
   * their centres (`liveness.cues`, `liveness.centres`).
   */
  stages: CaptureStages;
  /**
   * @deprecated the quality stage's limits, `stages.quality` (the same object), kept for readers of
   * the older shape; a copy of a profile that sets it does not change the stages
   */
  readonly limits: QualityLimits;
  /** @deprecated `stages.liveness.cues` (the same array), kept for readers of the older shape */
  readonly cues: readonly LivenessCue[];
  /** @deprecated `stages.liveness.centres` (the same object), kept for readers of the older shape */
  readonly centres: CueCentres;
  /**
   * How far the profile was validated, said wherever profiles are listed (`--help`, docs): `ready` only
   * when measured on real captures the profile was not developed on; `not-ready` when such a
   * measurement found it unfit; otherwise what it rests on.
   */
  validation: SensorValidation;
}

export interface SensorValidation {
  status: 'ready' | 'not-ready' | 'development-data' | 'synthetic';
  /** one line: what was measured, on what, with the numbers */
  evidence: string;
}

/** The status of a profile as a short tag for listings. */
export function validationTag(v: SensorValidation): string {
  switch (v.status) {
    case 'ready':
      return 'validated';
    case 'not-ready':
      return 'NOT READY';
    case 'development-data':
      return 'development data only';
    case 'synthetic':
      return 'synthetic frames only';
  }
}

/**
 * Measured independently (issue #27's review), on real captures of hardware this team has no
 * development data for: the enrolment rate (share of images that gave a template) and the EER of
 * `palm eval --sensor <profile>` on them.
 */
const INDEPENDENT = 'measured independently on real captures this team had no development data for';

/**
 * The side of a capture matters under `profile` exactly when its crop mirrors left hands
 * (`roi.mirrorLeft`, the simulator): the code's layout then depends on it, so a capture whose side
 * no cue decides is refused, and the decided side (reliable there) goes into the template header,
 * where it narrows the server's 1:N search. On every other profile (the cameras) the crop is never
 * mirrored and the side is only a label: a capture of undecided side is accepted as `unknown`, and
 * the header says `unknown` whatever was decided, because a camera's vote is wrong on 4–7 % of the
 * development captures and the side filter would then hide the probe's own palm
 * (docs/palm-pipeline.md, "Left/right").
 */
export function sideMatters(profile: SensorProfile): boolean {
  return mirrorsLeft(profile.stages.roi.proportions);
}

export { SENSOR_NAMES, type SensorName };

export const DEFAULT_SENSOR: SensorName = 'simulator';

/** The limits calibrated on the simulator's captures (the quality stage's defaults, stages/quality.ts). */
const SIMULATOR_LIMITS: QualityLimits = DEFAULT_QUALITY_PARAMS;

/**
 * Limits for real cameras, from the bona fide development captures (CASIA-PalmprintV1 persons
 * ≥ 0051 and COEP persons ≥ 055; aggregate percentiles in docs/palm-pipeline.md): each limit sits
 * beyond the 0.5th percentile of the bona fide measure, so a real hand is not refused as blurred,
 * dark or far; the hand-side, valley and ROI checks keep their own (geometric) rules.
 */
const CAMERA_LIMITS: QualityLimits = {
  minCoverage: 0.03,
  minHandMean: 40,
  maxSaturated: 0.25,
  minRelativeRadius: 0.1,
  maxAnisotropy: 4,
  minSharpness: 0.12,
  motionAnisotropy: 2.4,
};

/**
 * Real cameras frame the palm tightly: an ROI square that overhangs the frame is kept when at least
 * this share of it lies inside, its cells near and beyond the edge masked in the template.
 */
const MIN_INSIDE = 0.75;

/**
 * ROI on real palms: a square of 1.25 × the valley spacing whose top edge lies 0.3 spacing below
 * the valley line (centre 0.925 spacing = 0.74 side below), i.e. the central palm between the
 * finger roots and the wrist crease, clear of the thenar and hypothenar edges. At least MIN_INSIDE
 * of the square must lie in the frame (the simulator asks for all of it and 15 % more).
 * The side is the geometric mean of that and 1.5 × the inscribed radius: the valley spacing moves
 * with finger spread and with fingers touching at their roots, the palm's width does not (on the
 * CASIA development subset the EER fell from 15.4 to 12.1 % with the blend). The simulator's
 * square (SIMULATOR_ROI) reaches the wrist, which real frames often cut.
 */
const RING_ROI: RoiProportions = {
  sidePerSpacing: 1.25,
  centreBelow: 0.74,
  radiusWeight: 0.5,
  edgeMargin: 1,
  minInside: MIN_INSIDE,
  mirrorLeft: false,
};

/**
 * Without pegs the valleys come from the outline only: on the CASIA subset the finger-ring scan's
 * valleys gave 12.1 % EER, the outline's 4.1 % (with left hands mirrored), 0.91 % once crops were
 * no longer mirrored by a left/right decision that was wrong on 5 % of the captures.
 * Two steadier poses (whole CASIA set, with the valley tilt test of hand-contour.ts): "up" turned
 * 0.3 of the way towards the direction from the palm centre to the valleys (EER 0.98 → 0.96 %;
 * 0.5: 0.95 %), then the square's centre 0.8 side below the valley line instead of 0.74 (0.96 →
 * 0.87 %, FRR at FAR 1e-4 2.06 → 1.91 %; 0.86: 1.00 %); a side of 1.15 / 1.35 × the spacing
 * instead of 1.25 gave 0.95 / 1.05 % before the centre moved (docs/palm-pipeline.md). 0.3 was kept
 * over 0.5 because 0.5 gained 0.01 points, within noise, for a larger turn away from the valleys.
 * All of it was measured on CASIA (grey-dark) only: contactless-nir and phone share these
 * proportions without a real development set of their own.
 */
const OUTLINE_ROI: RoiProportions = { ...RING_ROI, outlineOnly: true, centreBelow: 0.8, centreUp: 0.3 };

/**
 * Hands held by pegs (COEP-like, contact scanners): the square of 1.2 × the inscribed radius around
 * the palm's centre of mass, turned to the hand's principal axis, the fingers pointing away from
 * where the arm leaves the frame (roi-pegs.ts). The pegs hold the fingers, not the palm: on COEP
 * the valley line's angle scattered by 11° (median) around the hand's, and the inscribed circle
 * slid along the palm. Whole COEP set without its two copied persons (71 persons): inscribed
 * circle by quarter turns of the valleys 7.5 % EER, FTA 2.1 %; centre of mass 2.8 %; with the
 * hand's axis 0.70 %, FTA 0 (docs/palm-pipeline.md). A bright background's cast shadows join the
 * fingers on the outline, so grey-bright scans finger rings first (RING_ROI).
 */
const PEG_ROI: RoiProportions = { ...RING_ROI, circle: 1.2 };

/**
 * The colour camera with pegs (COEP): camera and pegs are fixed and the hand lies on the board, so
 * the palm's scale in the frame is the device's. The side is a fixed 0.26 of the frame's shorter
 * side (1.17 × the median inscribed radius of the development captures, 0.225 of the shorter
 * side) instead of 1.2 × the hand's inscribed radius, which moves by up to 10 % between captures
 * of one hand with the thumb's spread; the centre's and the axis's discs follow the same fixed
 * radius (side / 1.2). Whole COEP set: EER 0.70 → 0.23 %; without the suspected re-captured
 * persons FRR at FAR 1e-3 3.2 → 1.2 % (docs/palm-pipeline.md, "Pegs ROI, second pass"). The
 * contact profiles keep the radius: their share of the frame is unknown without captures to
 * measure it on. The pegs ROI reads a hand mask cut halfway between the background's mean grey and
 * the Otsu level (`maskLevel`, roi-pegs.ts `pegHandMask`): Otsu cut the fingers and the shadowed
 * edge of dark-skinned palms off in some captures. COEP 67 persons: EER 0.25 → 0.03 %, FRR at FAR
 * 1e-4 4.0 → 2.0 % (docs/palm-pipeline.md, "Pegs ROI, third pass"); the contact profiles keep the
 * Otsu mask (a platen lit from below: no captures to measure it on).
 *
 * A second board (or camera distance) changes the device's scale: COEP's re-captured persons show
 * their hands 8–22 % smaller. The side and reaches therefore follow the hand's inscribed radius
 * halfway (`frameRadiusWeight` 0.5: the geometric mean of the device's scale and the hand's, as
 * RING_ROI blends the valley spacing with the radius). COEP 055+, eight merged, `fine` coding,
 * N = 1e6: FNIR one capture / with step-up 6.3 / 6.2 % → 3.6 / 2.7 %, the 32 re-captures 41 → 19 %
 * / 40 → 18 %, EER 0.70 → 0.36 %; weights 0.4 / 0.6 / 1 gave 3.6 / 3.1 / 4.4 % with step-up, so the
 * target's margin (3 %) is thin (docs/lab/identification.md, "Cross-board re-captures").
 */
const COLOUR_ROI: RoiProportions = {
  ...PEG_ROI,
  frameShare: 0.26,
  frameRadiusWeight: 0.5,
  maskLevel: PEG_MASK_LEVEL,
};

/**
 * The template coding of the visible-light profiles measured on real palms (grey-dark on CASIA,
 * colour on COEP): the fine creases' scales only (gabor.ts `CODING_SCALES`). At a million palms,
 * N-scaled bar and equal FPIR, one capture against one template per palm: CASIA FNIR 9.8 → 5.7 %,
 * COEP 15.4 → 6.3 %, each set's impostor tail fit dof 475 → 721 and 222 → 719 (docs/palm-pipeline.md,
 * "Template codings"). The other profiles keep `wide`: no real captures of theirs to measure on, and
 * NIR veins are the coarse scale's. A network decides on one coding (server PALMID_TEMPLATE_CODING).
 */
const PRINT_CODING = 'fine' as const;

/**
 * Periodicity centre on real cameras: bona fide development captures reach 0.30 (CASIA, 99.5th
 * percentile) and 0.45 (COEP, 1600 × 1200 colour JPEG: demosaicing and block artefacts), so the
 * centre sits at 0.6, beyond both; the simulator keeps 0.4. On the simulator's attacks (30 each)
 * the median periodicity is 0.77 for screens but 0.34 for prints: at 0.6 this cue alone catches
 * most pixel-grid screens and only the coarsest halftone prints.
 */
const CAMERA_PERIODICITY = 0.6;

/** Visible-light cameras read the periodicity cue only; the other centres are the simulator's. */
const CAMERA_CENTRES: CueCentres = { ...SIMULATOR_CENTRES, maxPeriodicity: CAMERA_PERIODICITY };

/**
 * Real NIR sensors: no bona fide NIR capture was available to calibrate on, so the NIR cues sit
 * where no bona fide capture seen so far falls: vein-scale contrast 0.008 (below the 0.5th
 * percentile of every development set, visible 0.016, and of the simulator's contact and
 * contactless NIR renders, 0.009), edge fall-off 0.97 (above CASIA's 99.5th percentile 0.925
 * and the contactless renders' 0.85). They catch only an extreme tonal compression or a
 * perfectly flat medium; a site must recalibrate them on its own bona fide captures and attacks.
 */
const NIR_CENTRES: CueCentres = { maxFalloff: 0.97, maxPeriodicity: CAMERA_PERIODICITY, minContrast: 0.008 };

const VISIBLE_ONLY =
  'periodic fine texture only: halftone prints and screen pixel grids resolved by the camera. ' +
  'A continuous-tone photo print, a high-resolution screen seen out of focus, and any 3-D fake ' +
  '(silicone, latex, gelatine) are NOT detected.';

/**
 * Every camera profile accepts a capture of undecided side (`sideMatters` is false: its crop is never
 * mirrored, so the side is only a label), and the 1:N search takes an unknown-side probe to both hands'
 * palms. On the CASIA development set 34 of 4 682 frames had valleys but no side cue and were refused
 * before (docs/palm-pipeline.md, "Left/right"). Enrolment still asks for a decided side.
 * Camera templates leave the side out of their header: with the side filter, 1:N
 * on the whole CASIA set identified 89.3 % of the probes, without it 94.5 % (wrong identities 13 and
 * 15 of 3 703), COEP 68 persons 90.7 % and 97.5 % (`palm-lab/scripts/side-filter.ts`).
 */
/** A profile of its stages, with the older fields read from them. */
function sensor(p: Omit<SensorProfile, 'limits' | 'cues' | 'centres'>): SensorProfile {
  return { ...p, limits: p.stages.quality, cues: p.stages.liveness.cues, centres: p.stages.liveness.centres };
}

export const SENSOR_PROFILES: Record<SensorName, SensorProfile> = {
  simulator: sensor({
    name: 'simulator',
    summary: 'the firmware simulator (NIR, dark background, whole hand)',
    detects:
      'paper prints and screens of the simulator: no NIR fall-off at the outline, periodic texture, ' +
      'compressed vein-scale contrast. Fitted on simulated attacks only.',
    stages: captureStages(SIMULATOR_ROI, {
      quality: SIMULATOR_LIMITS,
      liveness: { cues: ['rounded', 'aperiodic', 'contrast'], centres: SIMULATOR_CENTRES },
    }),
    validation: {
      status: 'synthetic',
      evidence: 'the firmware simulator’s own frames; says nothing about a real scanner',
    },
    // the simulator's crop mirrors left hands: an undecided side would lay the code out either way
  }),
  'contact-nir': sensor({
    name: 'contact-nir',
    summary: 'contact NIR scanner with pegs (hand on a platen, NIR light)',
    detects:
      'screens and coarse halftone prints by their periodic texture; under NIR only an extreme ' +
      'compression of vein-scale contrast (uncalibrated on real NIR: conservative). The outline ' +
      'fall-off is not used (a hand pressed on a platen is flat). Photo prints and 3-D fakes are NOT detected.',
    stages: captureStages(PEG_ROI, {
      quality: CAMERA_LIMITS,
      liveness: { cues: ['aperiodic', 'contrast'], centres: NIR_CENTRES },
    }),
    validation: {
      status: 'not-ready',
      evidence: `${INDEPENDENT}: enrols 88 % of the images, EER 26 %`,
    },
  }),
  'contact-visible': sensor({
    name: 'contact-visible',
    summary: 'contact visible-light scanner with pegs',
    detects: VISIBLE_ONLY,
    stages: captureStages(PEG_ROI, {
      quality: CAMERA_LIMITS,
      liveness: { cues: ['aperiodic'], centres: CAMERA_CENTRES },
    }),
    validation: {
      status: 'not-ready',
      evidence: `${INDEPENDENT}: enrols 69 % of the images, EER 25 %`,
    },
  }),
  'contactless-nir': sensor({
    name: 'contactless-nir',
    summary: 'contactless NIR palm-vein camera (850 nm, hand held free)',
    detects:
      'screens and coarse halftone prints by their periodic texture; a perfectly flat medium (no NIR ' +
      'fall-off at the outline) and an extreme compression of vein-scale contrast (uncalibrated on ' +
      'real NIR: conservative). Curved prints, photo prints and 3-D fakes are NOT detected.',
    stages: captureStages(OUTLINE_ROI, {
      quality: CAMERA_LIMITS,
      liveness: { cues: ['rounded', 'aperiodic', 'contrast'], centres: NIR_CENTRES },
    }),
    validation: {
      status: 'ready',
      evidence:
        'measured independently on a real palm-vein database it was not developed on: enrols 99.7 % of the images, EER 1.1 %',
    },
  }),
  'grey-dark': sensor({
    name: 'grey-dark',
    summary: 'grey-level visible camera, dark background (e.g. CASIA palmprint)',
    detects: VISIBLE_ONLY,
    stages: captureStages(OUTLINE_ROI, {
      quality: CAMERA_LIMITS,
      liveness: { cues: ['aperiodic'], centres: CAMERA_CENTRES },
      coding: PRINT_CODING,
    }),
    validation: {
      status: 'development-data',
      evidence: 'developed and measured on CASIA-PalmprintV1 (whole set EER 0.87 %); no independent set yet',
    },
  }),
  'grey-bright': sensor({
    name: 'grey-bright',
    summary: 'grey-level visible camera, bright background (the hand darker than the board)',
    detects: VISIBLE_ONLY,
    stages: captureStages(RING_ROI, {
      darkHand: true,
      quality: CAMERA_LIMITS,
      liveness: { cues: ['aperiodic'], centres: CAMERA_CENTRES },
    }),
    validation: {
      status: 'development-data',
      evidence: 'developed on grey captures against a bright board; no independent set yet',
    },
  }),
  colour: sensor({
    name: 'colour',
    summary: 'colour camera, dark or uniform background, pegs allowed (e.g. COEP)',
    detects: VISIBLE_ONLY,
    stages: captureStages(COLOUR_ROI, {
      quality: CAMERA_LIMITS,
      liveness: { cues: ['aperiodic'], centres: CAMERA_CENTRES },
      coding: PRINT_CODING,
    }),
    validation: {
      status: 'development-data',
      evidence: 'developed and measured on COEP (EER 0.03 %); no independent set yet',
    },
  }),
  phone: sensor({
    name: 'phone',
    summary: 'phone camera, hand held in front of any background',
    detects: `${VISIBLE_ONLY} Phone optics often blur screen grids away, so even screens are weakly detected.`,
    stages: captureStages(OUTLINE_ROI, {
      quality: CAMERA_LIMITS,
      liveness: { cues: ['aperiodic'], centres: CAMERA_CENTRES },
    }),
    validation: {
      status: 'not-ready',
      evidence: `${INDEPENDENT}: enrols 78–92 % of the images, EER 17–25 %`,
    },
  }),
};

export function isSensorName(v: string): v is SensorName {
  return (SENSOR_NAMES as readonly string[]).includes(v);
}

/** The profile of a name (or the default); unknown names are the caller's to refuse. */
export function sensorProfile(name: SensorName | SensorProfile | undefined): SensorProfile {
  if (name === undefined) return SENSOR_PROFILES[DEFAULT_SENSOR];
  return typeof name === 'string' ? SENSOR_PROFILES[name] : name;
}

/**
 * `profile` with other ROI proportions: the geometric stages (valleys, outline, ROI) follow them,
 * the quality and liveness stages stay the profile's.
 */
export function withRoi(profile: SensorProfile, proportions: RoiProportions): SensorProfile {
  return sensor({
    ...profile,
    stages: { ...profile.stages, ...geometryStages(proportions, profile.stages.detect.darkHand) },
  });
}

/** Commander parser of a `--sensor <profile>` value. */
export function sensorArg(v: string): SensorName {
  if (!isSensorName(v))
    throw new InvalidArgumentError(`unknown sensor profile "${v}" (one of: ${SENSOR_NAMES.join(', ')})`);
  return v;
}

/**
 * Help text listing the profiles, for `agent config` and the palm CLI: each with how far it was
 * validated, so that no profile reads as ready that a measurement found unfit.
 */
export function sensorHelp(): string {
  return SENSOR_NAMES.map((n) => {
    const p = SENSOR_PROFILES[n];
    return `  ${n.padEnd(16)} ${p.summary}\n  ${''.padEnd(16)} [${validationTag(p.validation)}] ${p.validation.evidence}`;
  }).join('\n');
}
