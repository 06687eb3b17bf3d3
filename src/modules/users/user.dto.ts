import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** Swagger shapes of the user-management bodies (docs/api.md §3); parsing happens in UsersService. */
export class CreateUserBody {
  @ApiProperty({ example: 'alice@example.org' })
  app_user_id!: string;
  @ApiPropertyOptional({ description: 'or header client_id / HTTP Basic' })
  client_id?: string;
  @ApiPropertyOptional({ description: 'or header client_secret / HTTP Basic' })
  client_secret?: string;
}

export class RenameUserBody {
  @ApiProperty({ description: 'the new name (the reference also calls it app_id_user)' })
  app_user_id!: string;
  @ApiPropertyOptional({ description: 'alias of app_user_id' })
  app_id_user?: string;
  @ApiProperty({ description: 'the user to rename; cannot itself be changed', example: 1001 })
  service_user_id!: string;
}

export class SignInSecretBody extends CreateUserBody {
  @ApiPropertyOptional({ description: '8-200 characters; omitted: a random one is made and returned once' })
  secret?: string;
}

export class AuthCodeBody extends CreateUserBody {
  @ApiPropertyOptional({
    description: 'space-separated; `openid` adds an id_token to the exchange',
    example: 'openid',
  })
  scope?: string;
}

export class UserView {
  @ApiProperty() service_user_id!: number;
  @ApiProperty() app_user_id!: string;
  @ApiProperty() active!: boolean;
  @ApiProperty() created!: Date;
}

export class CreatedUserView {
  @ApiProperty() service_user_id!: number;
  @ApiProperty() app_user_id!: string;
  @ApiProperty() active!: boolean;
  @ApiPropertyOptional({ description: 'absent when the user already existed' }) access_token?: string;
  @ApiPropertyOptional() refresh_token?: string;
  @ApiPropertyOptional({ description: 'an authorization code for the token endpoint' }) code?: string;
  @ApiPropertyOptional({ example: 'this user already exists' }) message?: string;
}

export class UserListView {
  @ApiProperty({ type: [UserView] }) users!: UserView[];
  @ApiProperty() total!: number;
  @ApiProperty() limit!: number;
  @ApiProperty() offset!: number;
}

export class AuthCodeView {
  @ApiProperty() code!: string;
  @ApiProperty({ example: 7200 }) expires_in!: number;
  @ApiProperty({ example: 'user/*.*' }) scope!: string;
}
