import { randomUUID } from 'node:crypto';
import { livenessToWire } from '@palmid/contracts/capture/liveness';
import { RpcError } from '@palmid/contracts/ws/rpc';
import { type CaptureHand, processCapture } from '@palmid/palm/capture/pipeline';
import type { Command } from 'commander';
import { type CliContext, CliError, EXIT } from '../context.ts';
import {
  connectKiosk,
  deviceKeyOf,
  keepDeviceKey,
  kioskUplink,
  openScannerPatiently,
  requireKioskIdentity,
} from './run.ts';

type Hand = 'left' | 'right';
interface Sample {
  template: Uint8Array;
  hand: Hand;
  quality: number;
  liveness: number;
  capturedAt: number;
}

/**
 * Why a capture cannot enrol as the asked hand, or null when it can. Enrolment stores the side with
 * the palm (the 1:N search of a known-side probe looks at that side only), so a capture whose side the
 * pipeline could not decide (`unknown`, camera profiles) is taken again, as is the other hand.
 */
export function sideRefusal(seen: CaptureHand, asked: Hand): string | null {
  if (seen === 'unknown')
    return `cannot tell which hand this is; please show your whole ${asked} hand, thumb included.`;
  if (seen !== asked) return `that looks like your ${seen} hand; please use your ${asked} hand.`;
  return null;
}

/** How many captures of the first hand, when the second is asked for, end a default enrolment with one hand. */
const SAME_HAND_GIVE_UP = 2;

function parseHands(value: string): Hand[] {
  const hands = value.split(',').map((h) => h.trim());
  if (
    hands.length === 0 ||
    hands.some((h) => h !== 'left' && h !== 'right') ||
    new Set(hands).size !== hands.length
  ) {
    throw new CliError('--hands must be right, left or right,left', EXIT.USAGE);
  }
  return hands as Hand[];
}

export function registerEnroll(program: Command, ctx: CliContext): void {
  program
    .command('enroll')
    .description(
      'enrol a new user at this kiosk: capture palms, then show a one-time claim code (redeem at POST /v1/session); with --code, add the palms to the user who gave the code',
    )
    .option(
      '--hands <list>',
      'hands to capture, in order; by default right then left, and the left is skipped when only the right is shown (a person with one hand, the simulator): given explicitly, every hand is required',
      'right,left',
    )
    // Three captures per hand: on the development sets, enrolling three samples per palm cuts genuine misses
    // at the million-palm bar 2.8× while raising impostor matches per palm 2.3× (docs/palm-pipeline.md,
    // "Identification at scale"; `palm eval --fusion`).
    .option(
      '--samples <n>',
      'captures per hand (default 3: more samples, fewer refusals at scale)',
      (v) => Number(v),
      3,
    )
    .option('--max-attempts <n>', 'captures per sample before giving up', (v) => Number(v), 6)
    .option(
      '--code <confirmation_code>',
      "add the palms to an existing user: the user's one-time code from POST /v1/palms/confirm (any kiosk)",
    )
    .option('--json', 'print the result as JSON')
    .action(
      async (
        opts: { hands: string; samples: number; maxAttempts: number; code?: string; json?: boolean },
        cmd: Command,
      ) => {
        const hands = parseHands(opts.hands);
        if (!Number.isInteger(opts.samples) || opts.samples < 1 || opts.samples * hands.length > 10) {
          throw new CliError('--samples must be a positive integer (at most 10 captures in all)', EXIT.USAGE);
        }
        const loaded = ctx.config(cmd);
        const id = requireKioskIdentity(loaded);
        const log = (line: string) => ctx.io.err(`${line}\n`);
        const stop = new AbortController();
        process.once('SIGINT', () => stop.abort());
        const key = deviceKeyOf(loaded);
        // The server first: a refused token, or a kiosk bound to a vendor without --code, is told before anyone
        // holds a palm.
        const uplink = kioskUplink(loaded, id, undefined, () => undefined, 'enrol', key);
        let hello: { vendor_id: string | null };
        try {
          hello = await connectKiosk(uplink, loaded.config.serverUrl);
        } catch (err) {
          await uplink.stop();
          throw err;
        }
        keepDeviceKey(key, log);
        if (hello.vendor_id !== null && !opts.code) {
          await uplink.stop();
          throw new CliError(
            `this kiosk is bound to vendor ${hello.vendor_id}: only kiosks without a vendor enrol new users; add a palm to an existing user with --code (docs/kiosk-install.md)`,
            EXIT.USAGE,
          );
        }
        // The server's nonce comes next: every sample captured after it is signed with it (freshness).
        // With --code the server checks the code here (without spending it): a mistyped or expired code is
        // said now, not after the person held both hands over the scanner.
        let begun: { enrolment_id: string; nonce: string };
        try {
          begun = await uplink.call('enroll.begin', opts.code ? { confirmation_code: opts.code } : {}, {
            timeoutMs: 15_000,
          });
        } catch (err) {
          await uplink.stop();
          if (opts.code && err instanceof RpcError && err.details.reason === 'invalid_confirmation_code')
            throw new CliError(
              `the code ${opts.code} is unknown, used or expired: ask the user for a new one (portal: "Get a code to add a palm", valid 10 minutes, once); nothing was captured`,
              EXIT.USAGE,
            );
          throw new CliError(
            `enrolment failed: ${err instanceof Error ? err.message : String(err)}`,
            EXIT.FAILED,
          );
        }
        const driver = await openScannerPatiently(ctx, loaded, stop.signal, log);
        if (!driver) {
          await uplink.stop();
          return;
        }
        const samples: Sample[] = [];
        // Without --hands the second hand is asked for, not required: a person who can show one hand only
        // (or a scanner, like the simulator, that shows one) enrols that hand after the same hand was shown
        // SAME_HAND_GIVE_UP times for the other; it can be added later with --code. docs/kiosk-install.md.
        const secondOptional = cmd.getOptionValueSource('hands') === 'default';
        try {
          everyHand: for (const [index, hand] of hands.entries()) {
            for (let n = 1; n <= opts.samples; n++) {
              log(`Hold your ${hand.toUpperCase()} palm over the scanner (${n}/${opts.samples})…`);
              let got: Sample | undefined;
              let sameHandAgain = 0;
              for (let attempt = 1; attempt <= opts.maxAttempts && !got; attempt++) {
                const frame = await driver.capture({ signal: stop.signal });
                const p = await processCapture(frame, { sensor: loaded.config.sensor });
                if (!p.ok) {
                  log(`  ${p.message}; again please.`);
                  if (p.reason === 'liveness_failed')
                    throw new CliError('presentation attack suspected: enrolment refused', EXIT.FAILED);
                  continue;
                }
                const wrongSide = sideRefusal(p.hand, hand);
                if (wrongSide) {
                  const first = hands[0]!;
                  if (secondOptional && index > 0 && n === 1 && p.hand === first) {
                    sameHandAgain++;
                    if (sameHandAgain >= SAME_HAND_GIVE_UP) {
                      log(
                        `  the ${hand} hand was not shown; enrolling the ${first} hand alone (add the ${hand} one later: enroll --code)`,
                      );
                      break everyHand;
                    }
                  }
                  log(`  ${wrongSide}`);
                  continue;
                }
                got = {
                  template: p.template,
                  hand, // sideRefusal passed: the capture's side is the one asked for
                  quality: p.quality / 100,
                  liveness: livenessToWire(p.liveness),
                  capturedAt: Date.now(),
                };
              }
              if (!got)
                throw new CliError(
                  `no usable capture of the ${hand} palm after ${opts.maxAttempts} attempts`,
                  EXIT.FAILED,
                );
              samples.push(got);
              log('  ✔ captured');
            }
          }
        } catch (err) {
          await uplink.stop();
          throw err;
        } finally {
          await driver.close();
        }
        try {
          // Each sample signed in order (counters increase), with the enrolment's id and nonce.
          const signed = samples.map((s) => ({
            template: Buffer.from(s.template).toString('base64'),
            hand: s.hand,
            quality: s.quality,
            liveness: s.liveness,
            attestation: key.attest({
              purpose: 'enroll',
              deviceId: id.pvsId,
              subject: begun.enrolment_id,
              nonce: begun.nonce,
              ...s,
            }),
          }));
          const [first, ...rest] = signed as [(typeof signed)[number], ...typeof signed];
          // One request id for the whole enrolment: a retry after a dropped link cannot create two users.
          const res = await uplink.call(
            'enroll',
            {
              ...first,
              ...(rest.length > 0 ? { samples: rest } : {}),
              ...(opts.code ? { confirmation_code: opts.code } : {}),
            },
            { id: `enroll:${randomUUID()}`, timeoutMs: 30_000 },
          );
          if (opts.json) ctx.io.out(`${JSON.stringify(res)}\n`);
          else if ('added' in res) {
            ctx.io.out(`\n  Your ${res.hands.join(' and ')} palm is now registered to your account.\n\n`);
          } else {
            ctx.io.out(`\n  Your claim code:  ${res.claim_code}\n\n`);
            ctx.io.out(
              `  Redeem it within 15 minutes in the palmid portal (or POST /v1/session) to manage your data.\n`,
            );
          }
        } catch (err) {
          throw new CliError(
            `enrolment failed: ${err instanceof Error ? err.message : String(err)}`,
            EXIT.FAILED,
          );
        } finally {
          await uplink.stop();
        }
      },
    );
}
