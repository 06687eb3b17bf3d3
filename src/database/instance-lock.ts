import { createServer, Server, Socket, connect } from 'net';
import { InstanceRecord, InstanceRole, lockAddress, parseInstanceRecord } from './instance-record';

/** A process attached to an instance: it said who it is when it connected. */
export interface Attached {
  pid: number;
  role: string;
}

/**
 * The lock of one data folder's embedded database, held by the process that started it for as
 * long as it runs. It is a listening abstract Unix socket: binding fails while another process
 * holds it, and the kernel releases it when the holder exits, even by SIGKILL. Every process that
 * connects gets the current record and keeps its connection open while it uses the instance (its
 * lease), so the holder knows who is attached when it wants to stop.
 */
export class HeldLock {
  private readonly leases = new Map<Socket, Attached | undefined>();

  private constructor(
    private readonly server: Server,
    private record: () => InstanceRecord,
  ) {
    server.on('connection', (socket) => {
      socket.unref();
      this.leases.set(socket, undefined);
      socket.on('error', () => undefined);
      socket.once('close', () => this.leases.delete(socket));
      socket.setEncoding('utf8');
      let text = '';
      socket.on('data', (chunk: string) => {
        text += chunk;
        const line = text.split('\n')[0];
        if (text.includes('\n') && text.length < 1000) {
          try {
            const who = JSON.parse(line) as Attached;
            this.leases.set(socket, { pid: Number(who.pid), role: String(who.role) });
          } catch {
            // not one of ours: keep it as an anonymous lease
          }
        }
      });
      socket.write(JSON.stringify(this.record()) + '\n');
    });
  }

  /** Takes the lock of `realFolder`, or undefined when another process holds it. */
  static take(realFolder: string, record: () => InstanceRecord): Promise<HeldLock | undefined> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'EADDRINUSE') resolve(undefined);
        else reject(e);
      });
      server.listen(lockAddress(realFolder), () => {
        server.unref();
        resolve(new HeldLock(server, record));
      });
    });
  }

  /** The processes attached now. */
  attached(): Attached[] {
    return [...this.leases.values()].map((a) => a ?? { pid: 0, role: 'unknown' });
  }

  /** Waits until no process is attached, or `ms` has passed; true when none is. */
  async drained(ms: number, onWait: (attached: Attached[]) => void): Promise<boolean> {
    const deadline = Date.now() + ms;
    let reported = 0;
    while (this.leases.size > 0 && Date.now() < deadline) {
      if (Date.now() - reported > 10_000) {
        onWait(this.attached());
        reported = Date.now();
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return this.leases.size === 0;
  }

  release(): Promise<void> {
    for (const socket of this.leases.keys()) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A connection to the holder of a data folder's lock: its record, and the lease. */
export interface OwnerConnection {
  record: InstanceRecord;
  release(): void;
}

/**
 * Connects to the process holding the lock of `realFolder` and reads its record; undefined when no
 * process holds it (or it let go meanwhile). The connection stays open, as a lease, until release.
 */
export function connectToOwner(realFolder: string, me: InstanceRole): Promise<OwnerConnection | undefined> {
  return new Promise((resolve) => {
    const socket = connect(lockAddress(realFolder));
    let text = '';
    let done = false;
    const finish = (result: OwnerConnection | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (!result) socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish(undefined), 5_000);
    socket.setEncoding('utf8');
    socket.on('error', () => finish(undefined));
    socket.on('close', () => finish(undefined));
    socket.on('connect', () => socket.write(JSON.stringify({ pid: process.pid, role: me }) + '\n'));
    socket.on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\n');
      if (end < 0) return;
      const record = parseInstanceRecord(text.slice(0, end));
      if (typeof record === 'string') return finish(undefined);
      socket.unref();
      finish({ record, release: () => socket.destroy() });
    });
  });
}
