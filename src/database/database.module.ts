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
import { DatabaseHandle } from './embedded-database';
import { ensureIndexes } from './ensure-indexes';
import { indexPlugin, ttlIndexesOf } from './index-plugin';

export const DATABASE_HANDLE = Symbol('DATABASE_HANDLE');

/** Logs the engine chosen, ensures indexes, and stops an embedded engine on shutdown. */
class DatabaseLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  constructor(
    @Inject(DATABASE_HANDLE) private readonly handle: DatabaseHandle,
    @InjectConnection() private readonly connection: Connection,
  ) {}

  private sweeper?: NodeJS.Timeout;

  async onApplicationBootstrap(): Promise<void> {
    const info = await this.connection.db!.admin().command({ buildInfo: 1 });
    const engine = info.ferretdbVersion ? `FerretDB ${info.ferretdbVersion}` : `MongoDB ${info.version}`;
    this.logger.log(
      `database engine: ${this.handle.engine} (${engine}, wire ${info.version}), db ${this.connection.name}`,
    );
    // Indexes are created at start-up, before the first request is served.
    for (const model of Object.values(this.connection.models)) {
      await model.init();
      const specs = model.schema
        .indexes()
        .map(([key, options]) => ({ key, ...options }) as mongo.IndexDescription);
      await ensureIndexes(this.connection.db!.collection(model.collection.collectionName), specs);
    }
    await this.ensureTtl(Boolean(info.ferretdbVersion));
  }

  /** Real TTL indexes on MongoDB; on FerretDB 1.x (no TTL) a sweeper deletes expired documents. */
  private async ensureTtl(ferret: boolean): Promise<void> {
    const db = this.connection.db!;
    const ttl = Object.values(this.connection.models).flatMap((m) =>
      ttlIndexesOf(m.schema).map((t) => ({ ...t, collection: m.collection.collectionName })),
    );
    if (!ferret) {
      // createIndexes made a plain index on the field; collMod turns it into a TTL index (MongoDB ≥ 5.1)
      for (const t of ttl) {
        await db.command({
          collMod: t.collection,
          index: { keyPattern: { [t.field]: 1 }, expireAfterSeconds: t.expireAfterSeconds },
        });
      }
      return;
    }
    if (ttl.length === 0) return;
    const sweep = async () => {
      for (const t of ttl) {
        const cutoff = new Date(Date.now() - t.expireAfterSeconds * 1000);
        await db
          .collection(t.collection)
          .deleteMany({ [t.field]: { $lt: cutoff } })
          .catch(() => undefined);
      }
    };
    this.sweeper = setInterval(() => void sweep(), 60_000);
    this.sweeper.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
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
            serverSelectionTimeoutMS: settings.dbTimeoutMs,
            socketTimeoutMS: 0,
            connectTimeoutMS: settings.dbTimeoutMs,
            autoIndex: false,
            autoCreate: true,
            maxPoolSize: 50,
            // command events feed the /metrics database latency histogram
            monitorCommands: settings.metricsEnabled,
            connectionFactory: (connection: Connection) => {
              connection.plugin(indexPlugin);
              return connection;
            },
          }),
        }),
      ],
      providers: [{ provide: DATABASE_HANDLE, useValue: handle }, DatabaseLifecycle],
      exports: [DATABASE_HANDLE],
    };
  }
}
