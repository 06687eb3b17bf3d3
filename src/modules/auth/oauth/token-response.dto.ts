import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** Swagger shapes of the token endpoints' answers (docs/api.md §4, RFC 6749 §5.1 / §5.2). */
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
