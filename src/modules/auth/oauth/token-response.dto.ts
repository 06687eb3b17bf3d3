import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** Swagger shapes of the token endpoints (docs/api.md §4, RFC 6749 §4.1.3 / §6 / §4.4). */
export class TokenRequestBody {
  @ApiProperty({ enum: ['authorization_code', 'refresh_token', 'client_credentials'] })
  grant_type!: string;
  @ApiPropertyOptional({ description: 'grant_type=authorization_code' }) code?: string;
  @ApiPropertyOptional({ description: 'grant_type=refresh_token' }) refresh_token?: string;
  @ApiPropertyOptional({ description: 'or HTTP Basic' }) client_id?: string;
  @ApiPropertyOptional({ description: 'or `secret`, or HTTP Basic' }) client_secret?: string;
  @ApiPropertyOptional({ description: 'client_credentials: e.g. `bulk-data user/*.rs`' }) scope?: string;
}

export class TokenResponseView {
  @ApiProperty() access_token!: string;
  @ApiProperty({ example: 'Bearer' }) token_type!: string;
  @ApiProperty({ example: 7200 }) expires_in!: number;
  @ApiProperty({ example: 'user/*.*' }) scope!: string;
  @ApiPropertyOptional({ description: 'user grants only' }) refresh_token?: string;
  @ApiPropertyOptional({ description: 'when the code was requested with scope openid' }) id_token?: string;
}

export class OAuthErrorView {
  @ApiProperty({
    enum: [
      'invalid_request',
      'invalid_client',
      'invalid_grant',
      'unauthorized_client',
      'unsupported_grant_type',
      'invalid_scope',
    ],
  })
  error!: string;
  @ApiProperty() error_description!: string;
}
