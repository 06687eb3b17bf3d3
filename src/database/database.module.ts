import {
  DynamicModule,
  Global,
  Inject,
  Logger,
  Module,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { InjectConnection, MongooseModule } from '@nestjs/mongoose';
import type { Connection, mongo } from 'mongoose';
import { Settings } from '../config/settings';
import { SETTINGS } from '../config/config.module';
import { DatabaseLiveness, serverSelectionTimeoutMs } from './database-liveness';
import { driverPoolOptions } from './driver-pool';
import { DatabaseHandle } from './embedded-database';
import { ensureIndexes } from './ensure-indexes';
import { indexPlugin } from './index-plugin';

export const DATABASE_HANDLE = Symbol('DATABASE_HANDLE');

/** Logs the engine chosen, ensures indexes, and stops an embedded engine on shutdown. */
class DatabaseLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  constructor(
    @Inject(DATABASE_HANDLE) private readonly handle: DatabaseHandle,
    @InjectConnection() private readonly connection: Connection,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const info = await this.connection.db!.admin().command({ buildInfo: 1 });
    // MongoDB reports its git version; a compatible engine behind MONGO_URL (DocumentDB's gateway)
    // reports only the wire version it speaks, so it is not named as MongoDB.
    const engine =
      this.handle.description ??
      (info.gitVersion ? `MongoDB ${info.version}` : `MongoDB-compatible engine, wire ${info.version}`);
    this.logger.log(`database engine: ${this.handle.engine} (${engine}), db ${this.connection.name}`);
    // Indexes (TTL ones included) are created at start-up, before the first request is served.
    for (const model of Object.values(this.connection.models)) {
      await model.init();
      const specs = model.schema
        .indexes()
        .map(([key, options]) => ({ key, ...options }) as mongo.IndexDescription);
      // Indexes first: on DocumentDB, `createIndexes` that creates its collection builds at once
      // (~40 ms), while on an existing collection, even an empty one, it waits for the background
      // index builder (1–2 s per call, measured).
      await ensureIndexes(this.connection.db!.collection(model.collection.collectionName), specs);
      // Then the collection itself when it has no index (autoCreate off): creating a collection can
      // take longer than one request's DB_TIMEOUT_MS on a fresh engine.
      await model.createCollection({ timeoutMS: 0 } as Record<string, number>);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.connection.close().catch(() => undefined);
    await this.handle.stop();
  }
}

@Global()
@Module({})
export class DatabaseModule {
  static register(handle: DatabaseHandle, dbName?: string): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        MongooseModule.forRootAsync({
          inject: [SETTINGS],
          useFactory: (settings: Settings) => ({
            uri: handle.uri,
            dbName: dbName ?? settings.mongoDb,
            // Fail fast instead of queueing when the database is away (→ 503), and reconnect
            // by ourselves when it comes back (the driver's monitor does that).
            bufferCommands: false,
            serverSelectionTimeoutMS: serverSelectionTimeoutMs(settings.dbTimeoutMs),
            socketTimeoutMS: 0,
            connectTimeoutMS: settings.dbTimeoutMs,
            // One deadline per operation (driver CSOT), server selection, connection checkout and
            // the reply together: a stopped (not dead) database answers MongoOperationTimeoutError
            // after DB_TIMEOUT_MS instead of hanging on an open socket (→ 503), and a query that
            // costs more is cut there too. Long cursors opt into a per-batch deadline
            // (LONG_CURSOR), index builds out of it (ensureIndexes). Measured in
            // test/database-hang.e2e-spec.ts.
            timeoutMS: settings.dbTimeoutMs,
            autoIndex: false,
            autoCreate: false,
            ...driverPoolOptions(settings),
            // command events feed the /metrics database latency histogram (with them on, the
            // driver decodes every reply once more: off unless metrics are)
            monitorCommands: settings.metricsEnabled,
            connectionFactory: (connection: Connection) => {
              connection.plugin(indexPlugin);
              return connection;
            },
          }),
        }),
      ],
      providers: [{ provide: DATABASE_HANDLE, useValue: handle }, DatabaseLifecycle, DatabaseLiveness],
      exports: [DATABASE_HANDLE, DatabaseLiveness],
    };
  }
}
