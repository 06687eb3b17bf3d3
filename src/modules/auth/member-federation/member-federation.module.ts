import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { UsersModule } from '../../users/users.module';
import { AuthModule } from '../auth.module';
import { MemberLaunchModule } from '../member-launch/member-launch.module';
import { FederatedLoginDoc, FederatedLoginSchema } from './federated-login.schema';
import { FederatedLoginsRepository } from './federated-logins.repository';
import { MemberFederationController } from './member-federation.controller';
import { MemberFederationService } from './member-federation.service';

/** Federated member sign-in: a health plan's members sign in at the plan's OpenID Connect provider. */
@Module({
  imports: [
    AuthModule,
    UsersModule,
    MemberLaunchModule,
    MongooseModule.forFeature([{ name: FederatedLoginDoc.name, schema: FederatedLoginSchema }]),
  ],
  controllers: [MemberFederationController],
  providers: [FederatedLoginsRepository, MemberFederationService],
  exports: [MemberFederationService],
})
export class MemberFederationModule {}
