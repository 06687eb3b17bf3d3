/**
 * The stack's own floor, second half (bench/read.ts): a minimal Nest 11 app on
 * @nestjs/platform-express (the design's required stack): one module, one controller, one route
 * `GET /:version/:type/:id` through Nest's own request pipeline (router, execution context, parameter
 * decorators; no guard, pipe, interceptor or middleware of ours), with the floor's driver call and
 * reply (bench/lib/read-floor-common.ts; the reply written on the response object, as the app's
 * FHIR reply is). What Nest on Express costs per read before any of the app's layers. Run by
 * bench/read.ts in a process of its own; prints `listening <port>`.
 */
import 'reflect-metadata';
import type { ServerResponse } from 'node:http';
import { Controller, Get, Module, Param, Res, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { floorReads, serveFloor, writeRead, type FloorReads } from './read-floor-common';

function readModule(reads: FloorReads): DynamicModule {
  @Controller()
  class ReadController {
    @Get(':version/:type/:id')
    async read(@Param('id') id: string, @Res() res: ServerResponse): Promise<void> {
      writeRead(res, await reads.read(id));
    }
  }
  @Module({})
  class ReadModule {}
  return { module: ReadModule, controllers: [ReadController] };
}

async function main(): Promise<void> {
  const reads = await floorReads();
  const app = await NestFactory.create(readModule(reads), new ExpressAdapter(), { logger: false });
  await app.init();
  serveFloor(app.getHttpServer(), reads);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
