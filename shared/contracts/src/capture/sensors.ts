/**
 * The palm sensor families palmid knows (docs/palm-pipeline.md, "Sensor profiles"): the capture
 * pipeline has a profile for each (shared/palm/src/capture/sensor-profiles.ts), and the simulator renders each
 * one it can imitate (firmware-sim/src/synth/sensors.ts), so `palm synth --sensor X` pairs with
 * `palm eval --sensor X`.
 */
export const SENSOR_NAMES = [
  'simulator',
  'contact-nir',
  'contact-visible',
  'contactless-nir',
  'grey-dark',
  'grey-bright',
  'colour',
  'phone',
] as const;
export type SensorName = (typeof SENSOR_NAMES)[number];
