import onnxProto from 'onnx-proto';
import { filterBank, type GaborScale, KERNEL_SIZE, ORIENTATIONS, SCALES } from './gabor.ts';

const { onnx } = onnxProto;

/** Size of the ROI fed to the graph, and of its output grid. */
export const ROI_SIZE = 128;
export const FEATURE_GRID = 32;
export const FEATURE_CHANNELS = SCALES.length * ORIENTATIONS;
export const MODEL_VERSION = 'palm-features-2';
/**
 * Window (px of the 64 × 64 working image) and floor of the local contrast normalisation; other
 * values only for studies (docs/palm-pipeline.md, "Matcher on real palm crops").
 */
const DEFAULT_NORM_WINDOW = 15;
const DEFAULT_NORM_FLOOR = 64; // variance floor, in grey levels²: flat skin is not amplified into noise

function floatTensor(name: string, dims: number[], values: ArrayLike<number>) {
  return onnx.TensorProto.create({
    name,
    dims,
    dataType: onnx.TensorProto.DataType.FLOAT,
    rawData: new Uint8Array(Float32Array.from(values).buffer),
  });
}

function ints(name: string, values: number[]) {
  return onnx.AttributeProto.create({ name, ints: values, type: onnx.AttributeProto.AttributeType.INTS });
}
function int(name: string, value: number) {
  return onnx.AttributeProto.create({ name, i: value, type: onnx.AttributeProto.AttributeType.INT });
}

/**
 * ROI (N×1×128×128, grey levels) → 2×2 average → local contrast normalisation
 * ((x − local mean) / local std, a CLAHE-like equaliser) → Gabor bank (2 scales × 6 orientations,
 * stride 2) → responses N×12×32×32.
 */
export function buildFeatureModel(
  scales: readonly GaborScale[] = SCALES,
  kernel = KERNEL_SIZE,
  norm: { window?: number; floor?: number } = {},
): Uint8Array {
  const normWindow = norm.window ?? DEFAULT_NORM_WINDOW;
  const normFloor = norm.floor ?? DEFAULT_NORM_FLOOR;
  const bank = filterBank(scales, kernel);
  const weights = new Float32Array(bank.length * kernel * kernel);
  for (const [i, k] of bank.entries()) weights.set(k, i * k.length);
  const pad = (normWindow - 1) / 2;
  const nodes = [
    onnx.NodeProto.create({
      opType: 'AveragePool',
      input: ['roi'],
      output: ['x'],
      attribute: [ints('kernel_shape', [2, 2]), ints('strides', [2, 2])],
    }),
    onnx.NodeProto.create({
      opType: 'AveragePool',
      input: ['x'],
      output: ['mean'],
      attribute: [
        ints('kernel_shape', [normWindow, normWindow]),
        ints('pads', [pad, pad, pad, pad]),
        int('count_include_pad', 0),
      ],
    }),
    onnx.NodeProto.create({ opType: 'Mul', input: ['x', 'x'], output: ['x2'] }),
    onnx.NodeProto.create({
      opType: 'AveragePool',
      input: ['x2'],
      output: ['mean2'],
      attribute: [
        ints('kernel_shape', [normWindow, normWindow]),
        ints('pads', [pad, pad, pad, pad]),
        int('count_include_pad', 0),
      ],
    }),
    onnx.NodeProto.create({ opType: 'Mul', input: ['mean', 'mean'], output: ['meanSq'] }),
    onnx.NodeProto.create({ opType: 'Sub', input: ['mean2', 'meanSq'], output: ['var0'] }),
    onnx.NodeProto.create({ opType: 'Relu', input: ['var0'], output: ['var1'] }),
    onnx.NodeProto.create({ opType: 'Add', input: ['var1', 'floor'], output: ['var'] }),
    onnx.NodeProto.create({ opType: 'Sqrt', input: ['var'], output: ['std'] }),
    onnx.NodeProto.create({ opType: 'Sub', input: ['x', 'mean'], output: ['centred'] }),
    onnx.NodeProto.create({ opType: 'Div', input: ['centred', 'std'], output: ['normalised'] }),
    onnx.NodeProto.create({
      opType: 'Conv',
      input: ['normalised', 'gabor'],
      output: ['responses'],
      attribute: [
        ints('kernel_shape', [kernel, kernel]),
        ints('strides', [2, 2]),
        // output sample i is centred on input 2i: 32 samples from 64
        ints('pads', [(kernel - 1) / 2, (kernel - 1) / 2, (kernel - 1) / 2, (kernel - 1) / 2]),
      ],
    }),
  ];
  const graph = onnx.GraphProto.create({
    name: MODEL_VERSION,
    node: nodes,
    initializer: [
      floatTensor('gabor', [bank.length, 1, kernel, kernel], weights),
      floatTensor('floor', [1], [normFloor]),
    ],
    input: [valueInfo('roi', ['N', 1, ROI_SIZE, ROI_SIZE])],
    output: [valueInfo('responses', ['N', FEATURE_CHANNELS, FEATURE_GRID, FEATURE_GRID])],
  });
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'palmid shared/palm/scripts/build-model.ts',
    producerVersion: MODEL_VERSION,
    opsetImport: [{ domain: '', version: 17 }],
    graph,
    metadataProps: [{ key: 'palmid.model', value: MODEL_VERSION }],
  });
  return onnx.ModelProto.encode(model).finish();
}

function valueInfo(name: string, dims: Array<number | string>) {
  return onnx.ValueInfoProto.create({
    name,
    type: {
      tensorType: {
        elemType: onnx.TensorProto.DataType.FLOAT,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  });
}
