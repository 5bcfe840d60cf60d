import { SENSOR_NAMES, type SensorName } from '@palmid/contracts/capture/sensors';
/**
 * Sensor profiles of the synthetic capture: what a frame looks like on each family of palm
 * scanner the field uses (docs/palm-pipeline.md, "Simulator"). `simulator` is the original
 * simulated NIR kiosk sensor (small hand, fingers up, clean); the others imitate public capture
 * set-ups and carry the names of the capture pipeline's sensor profiles
 * (shared/palm/src/capture/sensor-profiles.ts) where one fits, so a set rendered with `palm synth --sensor X`
 * is evaluated with `palm eval --sensor X`. The numbers are hand-set from looking at such
 * captures, not fitted to any image.
 */
/** Every sensor family but `phone` (a phone photo is not a scanner the simulator stands in for). */
export type Sensor = Exclude<SensorName, 'phone'>;

export const SENSORS: readonly Sensor[] = SENSOR_NAMES.filter((s): s is Sensor => s !== 'phone');

export const SENSOR_DESCRIPTIONS: Record<Sensor, string> = {
  simulator: 'the simulated kiosk sensor: NIR, small hand, fingers up, dark background (default)',
  'contact-nir': 'contact NIR scanner: hand flat on a platen between pegs, veins and creases, raw sensor',
  'contact-visible':
    'contact visible-light scanner: hand flat on a platen between pegs, crisp creases, no veins',
  'contactless-nir':
    'contactless 850 nm palm-vein camera: veins dark, creases faint, soft focus, dark background',
  'grey-dark':
    'grey visible-light camera over black (CASIA-like): large hand, fingers to the left and cut by the frame, JPEG',
  'grey-bright':
    'grey camera over a bright board: the hand darker than the background, a soft cast shadow, JPEG',
  colour:
    'colour camera over dark cloth with pegs between the fingers (COEP-like): RGB skin, fingers to the left, JPEG',
};

export interface SensorProfile {
  background: 'dark' | 'bright';
  /** background reflectance range */
  backgroundLevel: [number, number];
  /** skin reflectance range (times the hand model's albedo) */
  skin: [number, number];
  colour: boolean;
  pegs: boolean;
  /** vein darkening (0: invisible, as under visible light) */
  veins: number;
  /** crease contrast factor (1: as modelled) */
  creases: number;
  /** fine skin texture amplitude */
  texture: number;
  /** optical blur σ in pixels at 640 px frame width */
  blur: [number, number];
  /** read noise σ (8-bit levels) and shot-noise factor (σ² grows with the signal) */
  readNoise: [number, number];
  shotNoise: number;
  /** JPEG quality range, null for a raw sensor */
  jpeg: [number, number] | null;
  /** mean hand angle (radians, 0: fingers up, −π/2: fingers to the left) and its spread */
  angle: number;
  angleSpread: number;
  /** palm width as a fraction of the frame width */
  palmFraction: [number, number];
  /** palm centre in frame fractions */
  centre: { x: number; y: number };
  /** cast shadow strength on the background (bright backgrounds) */
  shadow: number;
  /** exponent of the 3-D shading: small for a hand pressed flat on a platen */
  relief: number;
}

const BASE: SensorProfile = {
  background: 'dark',
  backgroundLevel: [0.01, 0.05],
  skin: [0.78, 0.95],
  colour: false,
  pegs: false,
  veins: 0.06,
  creases: 1,
  texture: 1,
  blur: [0.6, 1.2],
  readNoise: [1.0, 2.5],
  shotNoise: 0.25,
  jpeg: [80, 92],
  angle: -Math.PI / 2,
  angleSpread: 0.12,
  palmFraction: [0.42, 0.5],
  centre: { x: 0.62, y: 0.52 },
  shadow: 0,
  relief: 0.8,
};

/** A hand pressed on a scanner's platen between pegs: flat, evenly lit, large, raw sensor. */
const CONTACT: SensorProfile = {
  ...BASE,
  backgroundLevel: [0.03, 0.08],
  skin: [0.72, 0.9],
  pegs: true,
  blur: [0.5, 0.9],
  readNoise: [0.8, 1.8],
  shotNoise: 0.15,
  jpeg: null,
  angle: 0,
  angleSpread: 0.05,
  palmFraction: [0.44, 0.5],
  centre: { x: 0.5, y: 0.62 },
  relief: 0.25,
};

export const PROFILES: Record<Exclude<Sensor, 'simulator'>, SensorProfile> = {
  'contact-nir': { ...CONTACT, veins: 0.7, creases: 0.6, texture: 0.7 },
  'contact-visible': { ...CONTACT, veins: 0.03, creases: 1.1 },
  'contactless-nir': {
    ...BASE,
    backgroundLevel: [0.02, 0.07],
    skin: [0.7, 0.88],
    veins: 1.5,
    creases: 0.3,
    texture: 0.5,
    blur: [1.4, 2.4],
    readNoise: [2, 4],
    shotNoise: 0.5,
    jpeg: null,
    angle: 0,
    angleSpread: 0.15,
    palmFraction: [0.36, 0.44],
    centre: { x: 0.5, y: 0.56 },
  },
  'grey-dark': BASE,
  'grey-bright': {
    ...BASE,
    background: 'bright',
    backgroundLevel: [0.78, 0.92],
    skin: [0.5, 0.66],
    angle: 0,
    angleSpread: 0.1,
    palmFraction: [0.36, 0.42],
    centre: { x: 0.5, y: 0.6 },
    shadow: 0.35,
  },
  colour: {
    ...BASE,
    backgroundLevel: [0.03, 0.08],
    skin: [0.75, 0.95],
    colour: true,
    pegs: true,
    palmFraction: [0.33, 0.38],
    centre: { x: 0.6, y: 0.52 },
  },
};
