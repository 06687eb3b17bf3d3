import { Module } from '@nestjs/common';
import { StorageModule } from '../../../storage/storage.module';
import { UsersModule } from '../../users/users.module';
import { AuthModule } from '../auth.module';
import { MemberLaunchController } from './member-launch.controller';
import { MemberLaunchService } from './member-launch.service';
import { MemberSessionService } from './member-session.service';

/**
 * The health plan's auth application (SMART App Launch): authorize, member sign-in, consent and
 * connected apps. Codes, tokens and grants live in AuthModule (LaunchTokensService), which the
 * token endpoint shares with the backend flows.
 */
@Module({
  imports: [AuthModule, UsersModule, StorageModule],
  controllers: [MemberLaunchController],
  providers: [MemberLaunchService, MemberSessionService],
  exports: [MemberSessionService],
})
export class MemberLaunchModule {}
