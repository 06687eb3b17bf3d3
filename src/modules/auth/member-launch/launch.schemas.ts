import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

/**
 * A pending SMART App Launch authorization (`tx`): the validated authorize request, kept while the
 * member signs in and decides. `_id` is the random transaction id the pages carry.
 */
@Schema({ collection: 'smart_authorizations', versionKey: false })
export class LaunchTransactionDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  /** client_id of the app asking. */
  @Prop({ type: String, required: true })
  app!: string;

  /** client_id of the plan whose member decides. */
  @Prop({ type: String, required: true })
  plan!: string;

  @Prop({ type: String, required: true })
  redirect_uri!: string;

  @Prop({ type: String, required: true })
  state!: string;

  /** The scopes asked for that this server knows, in the order asked. */
  @Prop({ type: [String], default: [] })
  scopes!: string[];

  /** FHIR version of `aud` (the tokens read that base). */
  @Prop({ type: String, required: true })
  version!: string;

  /** PKCE S256 challenge (RFC 7636), when sent. */
  @Prop({ type: String, required: false })
  code_challenge?: string;

  @Prop({ type: String, required: false })
  nonce?: string;

  /** The member who signed in for this transaction (MemberSessionService.signIn). */
  @Prop({ type: Number, required: false })
  u?: number;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;
}
export const LaunchTransactionSchema = SchemaFactory.createForClass(LaunchTransactionDoc);
LaunchTransactionSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

/** A member's signed-in browser: `_id` is the SHA-256 of the session cookie's random value. */
@Schema({ collection: 'member_sessions', versionKey: false })
export class MemberSessionDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  plan!: string;

  @Prop({ type: Number, required: true })
  u!: number;

  @Prop({ type: String, required: true })
  app_user_id!: string;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;
}
export const MemberSessionSchema = SchemaFactory.createForClass(MemberSessionDoc);
MemberSessionSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

/**
 * What a member allowed an app (one approval on the consent page). Every token and refresh token
 * issued from it names it (`smart.grant`); revoking it stops them all at once.
 */
@Schema({ collection: 'smart_grants', versionKey: false })
export class LaunchGrantDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  plan!: string;

  @Prop({ type: Number, required: true })
  u!: number;

  @Prop({ type: String, required: true })
  app_user_id!: string;

  @Prop({ type: String, required: true })
  app!: string;

  @Prop({ type: [String], default: [] })
  scopes!: string[];

  /** The member's Patient id in the plan's tenant (launch/patient). */
  @Prop({ type: String, required: false })
  patient?: string;

  @Prop({ type: String, required: true })
  version!: string;

  @Prop({ type: Date, required: true })
  created!: Date;

  @Prop({ type: Boolean, default: false })
  revoked!: boolean;
}
export const LaunchGrantSchema = SchemaFactory.createForClass(LaunchGrantDoc);
LaunchGrantSchema.index({ plan: 1, u: 1 });

/**
 * Codes and refresh tokens of launch grants: `_id` = `${app client_id}|SHA-256`, so a lookup by
 * another client finds nothing. Codes are bound to the redirect URI and the PKCE challenge; both
 * are single use (a second use revokes the grant).
 */
@Schema({ collection: 'smart_credentials', versionKey: false })
export class LaunchCredentialDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true, enum: ['code', 'refresh'] })
  kind!: 'code' | 'refresh';

  @Prop({ type: String, required: true })
  grant!: string;

  /** Scopes this credential yields (a refresh may narrow them). */
  @Prop({ type: [String], default: [] })
  scopes!: string[];

  @Prop({ type: String, required: false })
  redirect_uri?: string;

  @Prop({ type: String, required: false })
  code_challenge?: string;

  @Prop({ type: String, required: false })
  nonce?: string;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;

  @Prop({ type: Boolean, default: false })
  used!: boolean;
}
export const LaunchCredentialSchema = SchemaFactory.createForClass(LaunchCredentialDoc);
LaunchCredentialSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });
LaunchCredentialSchema.index({ grant: 1 });

export const LAUNCH_MODELS = [
  { name: LaunchTransactionDoc.name, schema: LaunchTransactionSchema },
  { name: MemberSessionDoc.name, schema: MemberSessionSchema },
  { name: LaunchGrantDoc.name, schema: LaunchGrantSchema },
  { name: LaunchCredentialDoc.name, schema: LaunchCredentialSchema },
];
