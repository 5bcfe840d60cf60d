import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { registerAttest } from './attest.ts';
import { registerCapture } from './capture.ts';
import { registerConfig } from './config.ts';
import { registerDevices } from './devices.ts';
import { registerDoctor } from './doctor.ts';
import { registerEnroll } from './enroll.ts';
import { registerRun } from './run.ts';

/** A command adds itself (and its subcommands) to the program. */
export type RegisterCommand = (program: Command, context: CliContext) => void;

/** Add new commands (run, enroll, …) here, one file each under ./commands. */
export const commands: RegisterCommand[] = [
  registerDevices,
  registerDoctor,
  registerCapture,
  registerConfig,
  registerRun,
  registerEnroll,
  registerAttest,
];
