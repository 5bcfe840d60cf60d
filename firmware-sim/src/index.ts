export {
  DEFAULT_EXPOSURE_US,
  DEFAULT_GAIN,
  FirmwareSimulator,
  type SimulatorOptions,
  type SimulatorSnapshot,
} from './device.ts';
export { type Fault, type FaultInput, type FaultKind, faultSchema } from './faults.ts';
export {
  createSynthPalmSource,
  type GrayFrame,
  type ImageSource,
  type RenderRequest,
  synthPalmSource,
  testPatternSource,
} from './image-source.ts';
export { openPty, type PtyEndpoint, socatAvailable } from './links/pty.ts';
export { listenTcp, type TcpEndpoint } from './links/tcp.ts';
export { type Presentation, parsePresentation, presentationSchema } from './presentation.ts';
export {
  describeStep,
  loadScenario,
  runScenario,
  type Scenario,
  type ScenarioStep,
  scenarioSchema,
} from './scenario.ts';
export { SENSOR_DESCRIPTIONS, SENSORS, type Sensor } from './synth/sensors.ts';
