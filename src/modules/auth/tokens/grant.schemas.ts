import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

/**
 * Authorization codes (docs/api.md §4): random, stored only as their SHA-256 (`_id`, prefixed by the client id), bound to client
 * (`c`), user (`u`) and scope, single use, expiring after AUTH_CODE_TTL.
 */
@Schema({ collection: 'auth_codes', versionKey: false })
export class AuthCodeDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  c!: string;

  @Prop({ type: Number, required: true })
  u!: number;

  @Prop({ type: String, required: true })
  app_user_id!: string;

  @Prop({ type: [String], default: [] })
  scope!: string[];

  @Prop({ type: Date, required: true })
  expiresAt!: Date;

  @Prop({ type: Boolean, default: false })
  used!: boolean;

  /** Refresh-token family issued from this code: revoked if the code is presented again. */
  @Prop({ type: String, required: false })
  family?: string;
}

export const AuthCodeSchema = SchemaFactory.createForClass(AuthCodeDoc);
// Expired documents are deleted by the engine (TTL index); expiry is also checked on every use,
// because a TTL monitor runs only now and then.
AuthCodeSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

/**
 * Refresh tokens, stored as `${client_id}|SHA-256` (`_id`). Each exchange marks the presented token used and
 * issues the next one in the same `family`; presenting a used token again revokes the family
 * (OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
 */
@Schema({ collection: 'refresh_tokens', versionKey: false })
export class RefreshTokenDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  c!: string;

  @Prop({ type: Number, required: true })
  u!: number;

  @Prop({ type: String, required: true })
  app_user_id!: string;

  @Prop({ type: String, required: true })
  family!: string;

  @Prop({ type: [String], default: [] })
  scope!: string[];

  @Prop({ type: Date, required: true })
  expiresAt!: Date;

  @Prop({ type: Boolean, default: false })
  used!: boolean;

  @Prop({ type: Boolean, default: false })
  revoked!: boolean;
}

export const RefreshTokenSchema = SchemaFactory.createForClass(RefreshTokenDoc);
RefreshTokenSchema.index({ c: 1, family: 1 });
RefreshTokenSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

/**
 * Revoked refresh-token families (`_id` = `${client_id}|${family}`), kept as long as an access
 * token issued with the family can live: the tenant guard refuses such access tokens (a reused
 * refresh token or code recalls everything issued from it, not only the refresh tokens).
 */
@Schema({ collection: 'revoked_token_families', versionKey: false })
export class RevokedFamilyDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  c!: string;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;
}

export const RevokedFamilySchema = SchemaFactory.createForClass(RevokedFamilyDoc);
RevokedFamilySchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });
