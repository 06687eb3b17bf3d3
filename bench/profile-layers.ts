/**
 * Where a read's server CPU goes, per layer of the app: reads a V8 CPU profile of the server
 * (`SERVER_NODE_ARGS="--cpu-prof --cpu-prof-interval 250 --cpu-prof-dir=DIR" npm run bench -- read`)
 * and charges each sample of its last BENCH_PROFILE_WINDOW seconds (default 10: the measured run;
 * the server stops right after it) to the nearest enclosing layer on its stack. Node's own frames
 * (socket writes, timers, streams) go to the layer that called them: a driver command's socket write
 * is the driver's, `res.end` is Express's response. With the server CPU per read of the same run,
 * each share becomes µs per read.
 * Run: node -r ts-node/register/transpile-only bench/profile-layers.ts <file.cpuprofile> [server µs per read]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Layers by file (or function): the first rule a frame matches names its layer. */
const LAYERS: ReadonlyArray<[string, RegExp, 'url' | 'name']> = [
  ['middleware: early refusal', /admission\/early-refusal/, 'url'],
  ['token check (jsonwebtoken)', /node_modules\/(jsonwebtoken|jws|jwa|ecdsa-sig-formatter)\//, 'url'],
  ['token check (verifyAccessToken, cache)', /verifyAccessToken/, 'name'],
  [
    'passport strategy and guard',
    /node_modules\/(passport|passport-http-bearer|passport-strategy|@nestjs\/passport)\//,
    'url',
  ],
  [
    'tenant resolution (resolver, identity lookups)',
    /tenancy\/(tenant-resolver|bearer-credential)|identity-lookup|clients\.service/,
    'url',
  ],
  ['SMART scope check', /tenancy\/smart-scope|fhir-http\/smart-scope-check/, 'url'],
  [
    'FHIR route guard (route checks, negotiation)',
    /fhir-http\/(fhir-route\.guard|negotiation|path-params)/,
    'url',
  ],
  ['admission (slot, lane, charges, credentials)', /src\/admission\//, 'url'],
  ['tenant guard (non-FHIR form)', /tenancy\/tenant\.guard/, 'url'],
  ['middleware: request id, request logs', /src\/logging\/request-logs/, 'url'],
  ['middleware: URL length, Cache-Control', /common\/response-hygiene|fhir-http\/fhir-route-state/, 'url'],
  ['middleware: helmet', /node_modules\/helmet\//, 'url'],
  ['middleware: CORS', /common\/cors/, 'url'],
  [
    'middleware: body parsers',
    /node_modules\/(body-parser|raw-body|type-is|content-type|media-typer)\//,
    'url',
  ],
  ['middleware: body guard', /common\/body-hygiene/, 'url'],
  [
    'logging (pino-http, pino)',
    /node_modules\/(pino|pino-http|nestjs-pino|pino-std-serializers|@pinojs\/redact)\//,
    'url',
  ],
  [
    'reply (serialisation, ETag, headers, charge, shaping)',
    /fhir-http\/(fhir-reply|fhir-express-adapter|reply-presenter|resource-shaping)/,
    'url',
  ],
  ['parameter decorators', /fhir-http\/fhir-params|use-tenant\.decorator/, 'url'],
  ['route table (the routes a request can match)', /fhir-http\/route-table/, 'url'],
  ["compiled FHIR route (in place of Nest's pipeline)", /fhir-http\/compiled-fhir-route/, 'url'],
  ['handler (controller, service)', /modules\/fhir-store\/fhir-store\.(controller|service)/, 'url'],
  ['storage (repository, tenant scope)', /src\/storage\//, 'url'],
  ['driver (mongodb, bson, mongoose)', /node_modules\/(mongodb|bson|mongoose)\//, 'url'],
  [
    'Nest guards/interceptors consumers, rxjs',
    /@nestjs\/core\/(guards|interceptors|helpers)|node_modules\/rxjs\//,
    'url',
  ],
  [
    'Nest router, params, reflector',
    /node_modules\/(@nestjs\/(core|common|platform-express)|reflect-metadata)\//,
    'url',
  ],
  ['Express response (send, set, type, status)', /node_modules\/express\/lib\/response/, 'url'],
  [
    'Express router, app, request',
    /node_modules\/(router|express|path-to-regexp|finalhandler|parseurl|qs|on-finished|send|etag|fresh|vary|depd|accepts|negotiator|proxy-addr|forwarded|ipaddr\.js|statuses|http-errors)\//,
    'url',
  ],
  ['garbage collector', /^\(garbage collector\)$/, 'name'],
  ['idle', /^\(idle\)$/, 'name'],
];
const NODE_INTERNAL = 'Node (HTTP server, sockets, streams)';

function layerOf(frame: ProfileNode['callFrame']): string | undefined {
  for (const [label, pattern, on] of LAYERS) {
    if (pattern.test(on === 'url' ? frame.url : frame.functionName)) return label;
  }
  return frame.url.startsWith('node:') ? NODE_INTERNAL : undefined;
}

function main(): void {
  const [file, perRead] = process.argv.slice(2);
  const windowSeconds = Number(process.env.BENCH_PROFILE_WINDOW ?? 10);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const memo = new Map<number, string>();
  /** The nearest layer of ours or a library's; Node's internals only when nothing else encloses. */
  const charge = (id: number): string => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    let weak: string | undefined;
    let label: string | undefined;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const layer = layerOf(byId.get(at)!.callFrame);
      if (layer === NODE_INTERNAL) weak ??= layer;
      else if (layer !== undefined) {
        label = layer;
        break;
      }
    }
    const result = label ?? weak ?? 'other';
    memo.set(id, result);
    return result;
  };
  const times: number[] = [];
  let t = profile.startTime;
  for (const delta of profile.timeDeltas) times.push((t += delta));
  const end = times[times.length - 1];
  // the last 0.3 s is the shutdown
  const from = end - (windowSeconds + 0.3) * 1e6;
  const to = end - 0.3e6;
  const counts = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    if (times[i] < from || times[i] > to) return;
    const layer = charge(id);
    counts.set(layer, (counts.get(layer) ?? 0) + 1);
  });
  const busy = [...counts].reduce((sum, [layer, n]) => (layer === 'idle' ? sum : sum + n), 0);
  console.log(`${busy} busy samples in the last ${windowSeconds} s`);
  for (const [layer, n] of [...counts].sort((a, b) => b[1] - a[1])) {
    if (layer === 'idle') continue;
    const share = n / busy;
    const us = perRead ? `${(share * Number(perRead)).toFixed(0).padStart(6)} µs` : '';
    console.log(
      `${layer.padEnd(56)} ${String(n).padStart(7)} ${(100 * share).toFixed(1).padStart(5)}% ${us}`,
    );
  }
}

main();
