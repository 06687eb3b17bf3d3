import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

/**
 * A sign-in at a plan's OpenID Connect provider that is under way: what the callback needs to
 * check the provider's answer (state, nonce, PKCE verifier) and to go on with the member's
 * authorization transaction. `_id` is the SHA-256 of the `state` sent to the provider; single use.
 */
@Schema({ collection: 'member_federated_logins', versionKey: false })
export class FederatedLoginDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  /** The pending authorization transaction of the SMART app (member-launch); absent: for the connected-apps page. */
  @Prop({ type: String, required: false })
  tx?: string;

  /** client_id of the health plan whose provider the member signs in at. */
  @Prop({ type: String, required: true })
  plan!: string;

  /** The issuer the login was started with: a change of settings meanwhile fails the login. */
  @Prop({ type: String, required: true })
  issuer!: string;

  @Prop({ type: String, required: true })
  nonce!: string;

  @Prop({ type: String, required: true })
  verifier!: string;

  /** SHA-256 of the browser-binding cookie: a callback URL replayed in another browser is refused. */
  @Prop({ type: String, required: true })
  browser!: string;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;
}

export const FederatedLoginSchema = SchemaFactory.createForClass(FederatedLoginDoc);
// Abandoned logins are deleted by the engine; expiry is also checked when one is taken.
FederatedLoginSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });
