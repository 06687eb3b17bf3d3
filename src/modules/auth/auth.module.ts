import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { BackendServicesRepository } from './backend-services/backend-services.repository';
import {
  AssertionJtiDoc,
  AssertionJtiSchema,
  ClientJwksDoc,
  ClientJwksSchema,
} from './backend-services/backend-services.schemas';
import { BackendServicesService } from './backend-services/backend-services.service';
import { ClientDoc, ClientSchema } from './clients/client.schema';
import { ClientsRepository } from './clients/clients.repository';
import { ClientsService } from './clients/clients.service';
import {
  OAuthController,
  RealmTokenController,
  TokenManagementController,
  WellKnownController,
} from './oauth/oauth.controller';
import { OAuthService } from './oauth/oauth.service';
import { RateLimitRepository } from './rate-limit/rate-limit.repository';
import { RateLimitDoc, RateLimitSchema } from './rate-limit/rate-limit.schema';
import { ClientAuthenticator } from './rate-limit/client-authenticator';
import { RateLimitService } from './rate-limit/rate-limit.service';
import {
  AuthCodeDoc,
  AuthCodeSchema,
  RefreshTokenDoc,
  RefreshTokenSchema,
  RevokedFamilyDoc,
  RevokedFamilySchema,
} from './tokens/grant.schemas';
import { GrantService } from './tokens/grant.service';
import { GrantsRepository } from './tokens/grants.repository';
import { TokenService } from './tokens/token.service';
import { LaunchRepository } from './member-launch/launch.repository';
import { LAUNCH_MODELS } from './member-launch/launch.schemas';
import { LaunchTokensService } from './member-launch/launch-tokens.service';

/** Client applications, authorization codes, tokens, program realms, discovery, rate limits. */
@Module({
  imports: [
    MongooseModule.forFeature([
      { name: ClientDoc.name, schema: ClientSchema },
      { name: AuthCodeDoc.name, schema: AuthCodeSchema },
      { name: RefreshTokenDoc.name, schema: RefreshTokenSchema },
      { name: RevokedFamilyDoc.name, schema: RevokedFamilySchema },
      { name: RateLimitDoc.name, schema: RateLimitSchema },
      { name: ClientJwksDoc.name, schema: ClientJwksSchema },
      { name: AssertionJtiDoc.name, schema: AssertionJtiSchema },
      ...LAUNCH_MODELS,
    ]),
  ],
  controllers: [OAuthController, TokenManagementController, RealmTokenController, WellKnownController],
  providers: [
    ClientsRepository,
    ClientsService,
    TokenService,
    GrantsRepository,
    GrantService,
    RateLimitRepository,
    RateLimitService,
    ClientAuthenticator,
    OAuthService,
    BackendServicesRepository,
    BackendServicesService,
    LaunchRepository,
    LaunchTokensService,
  ],
  exports: [
    LaunchRepository,
    LaunchTokensService,
    ClientsService,
    TokenService,
    GrantService,
    RateLimitService,
    BackendServicesService,
    ClientAuthenticator,
  ],
})
export class AuthModule {}
