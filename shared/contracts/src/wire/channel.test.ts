import { describe, expect, it } from 'vitest';
import { type ChannelEvent, WireChannel } from './channel.ts';
import { WireError } from './errors.ts';
import { encodeFrame, type Frame } from './frame.ts';
import { decodeMessage, type Message, toFrame } from './messages.ts';
import { FrameParser } from './parser.ts';

/** A scripted device: `answer` decides, per received command, what bytes go back (or none). */
function harness(
  answer: (msg: Message, seq: number, n: number) => Uint8Array[] | undefined,
  timeoutMs = 100,
) {
  const events: ChannelEvent[] = [];
  const unknown: Frame[] = [];
  const deviceParser = new FrameParser();
  let n = 0;
  const channel: WireChannel = new WireChannel(
    (bytes) => {
      for (const f of deviceParser.push(bytes)) {
        const reply = answer(decodeMessage(f), f.seq, n++);
        if (reply)
          setImmediate(() => {
            for (const b of reply) channel.receive(b);
          });
      }
    },
    { timeoutMs, retries: 2, onEvent: (e) => events.push(e), onUnknownFrame: (f) => unknown.push(f) },
  );
  return { channel, events, unknown };
}

const frame = (m: Message, seq: number) => encodeFrame(toFrame(m, seq));
const info: Message = {
  kind: 'INFO',
  protocol: 1,
  width: 320,
  height: 240,
  bitsPerPixel: 8,
  maxChunk: 1024,
  firmware: '1.0.0',
  model: 'PV-320',
  serial: 'X1',
};

describe('WireChannel', () => {
  it('matches the response by sequence number', async () => {
    const { channel } = harness((m, seq) => (m.kind === 'GET_INFO' ? [frame(info, seq)] : undefined));
    await expect(channel.request({ kind: 'GET_INFO' }, 'INFO')).resolves.toEqual(info);
    expect(channel.stats.requests).toBe(1);
  });

  it('retries after a timeout with a new seq and ignores the late answer to the first attempt', async () => {
    let firstSeq = -1;
    const { channel } = harness((_m, seq, n) => {
      if (n === 0) {
        firstSeq = seq;
        return undefined; // first attempt is lost
      }
      return [frame({ ...info, serial: 'stale' } as Message, firstSeq), frame(info, seq)];
    });
    await expect(channel.request({ kind: 'GET_INFO' }, 'INFO')).resolves.toEqual(info);
    expect(channel.stats).toMatchObject({ timeouts: 1, retries: 1, unmatched: 1 });
  });

  it('calls onSent once, after the first attempt went out and not for the retry; a throwing hook is ignored', async () => {
    const received: number[] = [];
    const sentAt: number[][] = [];
    const { channel } = harness((_m, seq, n) => {
      received.push(seq);
      return n === 0 ? undefined : [frame(info, seq)]; // the first attempt is lost
    });
    const request = channel.request({ kind: 'GET_INFO' }, 'INFO', {
      onSent: () => {
        sentAt.push([...received]);
        throw new Error('a hook that fails');
      },
    });
    await expect(request).resolves.toEqual(info);
    expect(received).toHaveLength(2);
    // called once, when the first attempt's frame had reached the link
    expect(sentAt).toEqual([[received[0]]]);
  });

  it('gives up with TIMEOUT after all retries', async () => {
    const { channel } = harness(() => undefined, 10);
    const err = await channel.request({ kind: 'GET_INFO' }, 'INFO').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe('TIMEOUT');
    expect((err as WireError).message).toMatch(/GET_INFO after 3 attempt/);
  });

  it('turns a NAK into a NAK error naming the device reason, without retrying', async () => {
    const { channel } = harness((_m, seq) => [
      frame({ kind: 'NAK', forType: 0x02, code: 3, message: 'busy' }, seq),
    ]);
    const err = (await channel
      .request({ kind: 'START_CAPTURE', token: 1 }, 'CAPTURE_STARTED')
      .catch((e) => e)) as WireError;
    expect(err.code).toBe('NAK');
    expect(err.deviceCode).toBe(3);
    expect(err.message).toMatch(/BUSY/);
    expect(channel.stats.retries).toBe(0);
  });

  it('delivers events, counts unknown frame types and keeps working', async () => {
    const { channel, events, unknown } = harness((_m, seq) => [
      frame({ kind: 'EVT_PALM_PRESENT', distanceMm: 40, coverage: 90 }, 0),
      encodeFrame({ type: 0x6a, seq: 0, payload: Uint8Array.of(1, 2, 3) }),
      frame(info, seq),
    ]);
    await channel.request({ kind: 'GET_INFO' }, 'INFO');
    expect(events).toEqual([{ kind: 'EVT_PALM_PRESENT', distanceMm: 40, coverage: 90 }]);
    expect(unknown.map((f) => f.type)).toEqual([0x6a]);
    expect(channel.stats.unknownFrames).toBe(1);
  });

  it('retries at once when the answer is intact but its payload is malformed', async () => {
    const { channel } = harness((_m, seq, n) =>
      n === 0 ? [encodeFrame({ type: 0x81, seq, payload: Uint8Array.of(1) })] : [frame(info, seq)],
    );
    await expect(channel.request({ kind: 'GET_INFO' }, 'INFO', { timeoutMs: 5000 })).resolves.toEqual(info);
    expect(channel.stats).toMatchObject({ badPayloads: 1, timeouts: 0, retries: 1 });
  });

  it('retries at once when the only awaited answer arrives with a bad CRC', async () => {
    const { channel } = harness((_m, seq, n) => {
      if (n > 0) return [frame(info, seq)];
      const bytes = frame(info, seq);
      bytes[bytes.length - 1]! ^= 0xff; // corrupt the CRC
      return [bytes];
    });
    await expect(channel.request({ kind: 'GET_INFO' }, 'INFO', { timeoutMs: 5000 })).resolves.toEqual(info);
    expect(channel.stats).toMatchObject({ badCrc: 1, timeouts: 0, retries: 1 });
  });

  it('close() rejects what is in flight with DISCONNECTED and refuses new requests', async () => {
    const { channel } = harness(() => undefined, 10_000);
    const pending = channel.request({ kind: 'GET_INFO' }, 'INFO');
    channel.close();
    await expect(pending).rejects.toMatchObject({ code: 'DISCONNECTED' });
    await expect(channel.request({ kind: 'GET_INFO' }, 'INFO')).rejects.toMatchObject({
      code: 'DISCONNECTED',
    });
  });

  it('a failing write rejects with DISCONNECTED', async () => {
    const channel = new WireChannel(() => {
      throw new Error('EIO');
    });
    await expect(channel.request({ kind: 'GET_INFO' }, 'INFO')).rejects.toThrow(/write failed: EIO/);
  });

  it('several requests in flight: a lost answer is asked for again as soon as a later answer overtakes it', async () => {
    const { channel } = harness((_m, seq, n) => (n === 0 ? undefined : [frame(info, seq)]), 60_000);
    const all = [1, 2, 3].map(() => channel.request({ kind: 'GET_INFO' }, 'INFO'));
    await expect(Promise.all(all)).resolves.toEqual([info, info, info]);
    expect(channel.stats).toMatchObject({ overtaken: 1, retries: 1, timeouts: 0, unmatched: 0 });
  });

  it('several requests in flight: a corrupted answer retries the oldest waiting request at once', async () => {
    const { channel } = harness((_m, seq, n) => {
      const bytes = frame(info, seq);
      if (n === 1) bytes[bytes.length - 1]! ^= 0xff; // the second answer arrives with a bad CRC
      return [bytes];
    }, 60_000);
    const all = [1, 2, 3].map(() => channel.request({ kind: 'GET_INFO' }, 'INFO'));
    await expect(Promise.all(all)).resolves.toEqual([info, info, info]);
    expect(channel.stats).toMatchObject({ badCrc: 1, retries: 1, timeouts: 0, overtaken: 0 });
  });

  it('answers queued behind each other on a slow line do not time out while the queue moves', async () => {
    // The device answers one command every 40 ms; 8 in flight take 320 ms, longer than the 200 ms timeout.
    const queue: Uint8Array[] = [];
    const parser = new FrameParser();
    const channel: WireChannel = new WireChannel(
      (bytes) => {
        for (const f of parser.push(bytes)) queue.push(frame(info, f.seq));
      },
      { timeoutMs: 200, retries: 0 },
    );
    const line = setInterval(() => {
      const next = queue.shift();
      if (next) channel.receive(next);
    }, 40);
    try {
      const all = Array.from({ length: 8 }, () => channel.request({ kind: 'GET_INFO' }, 'INFO'));
      await expect(Promise.all(all)).resolves.toHaveLength(8);
      expect(channel.stats).toMatchObject({ timeouts: 0, retries: 0 });
    } finally {
      clearInterval(line);
    }
  });

  it('a silent device still fails every request in flight with TIMEOUT', async () => {
    const { channel } = harness(() => undefined, 10);
    const all = [1, 2, 3].map(() => channel.request({ kind: 'GET_INFO' }, 'INFO').catch((e: unknown) => e));
    for (const err of await Promise.all(all)) expect((err as WireError).code).toBe('TIMEOUT');
    expect(channel.stats.timeouts).toBe(9);
  });
});
