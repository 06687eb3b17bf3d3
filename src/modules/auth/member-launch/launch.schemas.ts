import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

/** The field kinds of these documents (each names its type: Mongoose reads no TypeScript type). */
type FieldType = StringConstructor | NumberConstructor | DateConstructor;
const Required = (type: FieldType) => Prop({ type, required: true });
const Optional = (type: FieldType) => Prop({ type, required: false });
const StringList = () => Prop({ type: [String], default: [] });
const Flag = () => Prop({ type: Boolean, default: false });

/**
 * A pending SMART App Launch authorization (`tx`): the validated authorize request, kept while the
 * member signs in and decides. `_id` is the random transaction id the pages carry.
 */
@Schema({ collection: 'smart_authorizations', versionKey: false })
export class LaunchTransactionDoc {
  @Required(String)
  _id!: string;

  /** client_id of the app asking. */
  @Required(String)
  app!: string;

  /** client_id of the plan whose member decides. */
  @Required(String)
  plan!: string;

  @Required(String)
  redirect_uri!: string;

  @Required(String)
  state!: string;

  /** The scopes asked for that this server knows, in the order asked. */
  @StringList()
  scopes!: string[];

  /** FHIR version of `aud` (the tokens read that base). */
  @Required(String)
  version!: string;

  /** PKCE S256 challenge (RFC 7636), when sent. */
  @Optional(String)
  code_challenge?: string;

  @Optional(String)
  nonce?: string;

  /** The member who signed in for this transaction (MemberSessionService.signIn). */
  @Optional(Number)
  u?: number;

  @Required(Date)
  expiresAt!: Date;
}
export const LaunchTransactionSchema = SchemaFactory.createForClass(LaunchTransactionDoc);
LaunchTransactionSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

/** A member's signed-in browser: `_id` is the SHA-256 of the session cookie's random value. */
@Schema({ collection: 'member_sessions', versionKey: false })
export class MemberSessionDoc {
  @Required(String)
  _id!: string;

  @Required(String)
  plan!: string;

  @Required(Number)
  u!: number;

  @Required(String)
  app_user_id!: string;

  @Required(Date)
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
  @Required(String)
  _id!: string;

  @Required(String)
  plan!: string;

  @Required(Number)
  u!: number;

  @Required(String)
  app_user_id!: string;

  @Required(String)
  app!: string;

  @StringList()
  scopes!: string[];

  /** The member's Patient id in the plan's tenant (launch/patient). */
  @Optional(String)
  patient?: string;

  @Required(String)
  version!: string;

  @Required(Date)
  created!: Date;

  @Flag()
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
  @Required(String)
  _id!: string;

  @Prop({ type: String, required: true, enum: ['code', 'refresh'] })
  kind!: 'code' | 'refresh';

  @Required(String)
  grant!: string;

  /** Scopes this credential yields (a refresh may narrow them). */
  @StringList()
  scopes!: string[];

  @Optional(String)
  redirect_uri?: string;

  @Optional(String)
  code_challenge?: string;

  @Optional(String)
  nonce?: string;

  @Required(Date)
  expiresAt!: Date;

  @Flag()
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
