// Minimal typings for the parts of snarkjs (untyped JS) that palmid uses.
declare module 'snarkjs' {
  export type FileRef = string | { type: 'mem'; data?: Uint8Array };
  export interface Logger {
    debug(msg: string): void;
    info(msg: string): void;
    warn(msg: string): void;
    error(msg: string): void;
  }
  export interface Groth16Proof {
    pi_a: string[];
    pi_b: string[][];
    pi_c: string[];
    protocol: string;
    curve: string;
  }
  export interface VerificationKey {
    protocol: string;
    curve: string;
    nPublic: number;
    [key: string]: unknown;
  }
  export interface ProverOptions {
    singleThread?: boolean;
  }
  export const groth16: {
    fullProve(
      input: Record<string, unknown>,
      wasm: FileRef,
      zkey: FileRef,
      logger?: Logger,
      wtnsCalcOptions?: Record<string, unknown>,
      proverOptions?: ProverOptions,
    ): Promise<{ proof: Groth16Proof; publicSignals: string[] }>;
    prove(
      zkey: FileRef,
      witness: FileRef,
      logger?: Logger,
      options?: ProverOptions,
    ): Promise<{ proof: Groth16Proof; publicSignals: string[] }>;
    verify(
      vk: VerificationKey,
      publicSignals: string[],
      proof: Groth16Proof,
      logger?: Logger,
    ): Promise<boolean>;
  };
  export const wtns: {
    calculate(
      input: Record<string, unknown>,
      wasm: FileRef,
      out: FileRef,
      options?: Record<string, unknown>,
    ): Promise<void>;
  };
  export const powersOfTau: {
    newAccumulator(curve: unknown, power: number, fileName: string, logger?: Logger): Promise<unknown>;
    contribute(
      oldPtau: string,
      newPtau: string,
      name: string,
      entropy: string,
      logger?: Logger,
    ): Promise<unknown>;
    beacon(
      oldPtau: string,
      newPtau: string,
      name: string,
      beaconHash: string,
      numIterationsExp: number,
      logger?: Logger,
    ): Promise<unknown>;
    preparePhase2(oldPtau: string, newPtau: string, logger?: Logger): Promise<unknown>;
  };
  export const zKey: {
    newZKey(r1cs: string, ptau: string, zkey: string, logger?: Logger): Promise<unknown>;
    contribute(
      oldZkey: string,
      newZkey: string,
      name: string,
      entropy: string,
      logger?: Logger,
    ): Promise<unknown>;
    beacon(
      oldZkey: string,
      newZkey: string,
      name: string,
      beaconHash: string,
      numIterationsExp: number,
      logger?: Logger,
    ): Promise<unknown>;
    exportVerificationKey(zkey: FileRef, logger?: Logger): Promise<VerificationKey>;
    verifyFromR1cs(r1cs: string, ptau: string, zkey: string, logger?: Logger): Promise<boolean>;
  };
  export const curves: {
    getCurveFromName(name: string, options?: ProverOptions): Promise<{ terminate(): Promise<void> }>;
  };
}

declare module 'circom_runtime' {
  export interface WitnessCalculator {
    calculateWTNSBin(input: Record<string, unknown>, sanityCheck?: boolean): Promise<Uint8Array>;
  }
  export function WitnessCalculatorBuilder(
    code: Uint8Array,
    options?: { memorySize?: number },
  ): Promise<WitnessCalculator>;
}

declare module 'ffjavascript' {
  export function buildBn128(singleThread?: boolean): Promise<{ terminate(): Promise<void> }>;
}
