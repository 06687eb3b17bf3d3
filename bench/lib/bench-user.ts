import type { INestApplication } from '@nestjs/common';
import { ClientsService } from '../../src/modules/auth/clients/clients.service';
import { UsersService } from '../../src/modules/users/users.service';

/** A client application and one of its users, made in-process the way the user-management route makes them. */
export async function createBenchUser(
  app: INestApplication,
  options: { programs: string[]; appUserId?: string },
) {
  const client = await app.get(ClientsService).create({ name: 'bench', programs: options.programs });
  const users = app.get(UsersService);
  const user = await users.createUser(
    await users.authenticateClient({
      clientId: client.client_id,
      secret: client.client_secret,
      basic: false,
      address: '127.0.0.1',
    }),
    options.appUserId ?? 'bench-user',
  );
  return { client, user };
}
