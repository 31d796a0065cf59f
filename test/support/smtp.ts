import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface ReceivedMail {
  to: string[];
  from: string;
  parsed: ParsedMail;
}

export interface TestSmtp {
  port: number;
  mails: ReceivedMail[];
  /** Refuses these recipients with 550 (a permanent failure). */
  refuse: Set<string>;
  /** While set, DATA is held until `release()` (a stalled server). */
  stall(): { release(): void };
  close(): Promise<void>;
}

/**
 * A real SMTP server (the `smtp-server` package) on a loopback port that keeps every message it
 * accepts, parsed with `mailparser`: tests read what a customer would receive.
 */
export async function startSmtp(port = 0): Promise<TestSmtp> {
  const mails: ReceivedMail[] = [];
  const refuse = new Set<string>();
  let gate: Promise<void> | null = null;
  const opts: SMTPServerOptions = {
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, cb) {
      if (refuse.has(address.address)) return cb(Object.assign(new Error('No such mailbox'), { responseCode: 550 }));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        void (async () => {
          if (gate) await gate;
          const parsed = await simpleParser(Buffer.concat(chunks));
          mails.push({ to: session.envelope.rcptTo.map((r) => r.address), from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', parsed });
          cb();
        })();
      });
    },
  };
  const server = new SMTPServer(opts);
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.server.address() as AddressInfo).port,
    mails,
    refuse,
    stall() {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      return {
        release: () => {
          gate = null;
          release();
        },
      };
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
