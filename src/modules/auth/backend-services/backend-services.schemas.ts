import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

/**
 * The public keys a client signs its SMART Backend Services assertions with
 * (https://hl7.org/fhir/smart-app-launch/backend-services.html#registering-a-client-communicating-public-keys):
 * a JWK Set registered by value, or the URL of one. `_id` is the client_id.
 */
@Schema({ collection: 'client_jwks', versionKey: false })
export class ClientJwksDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  /** JSON text of a JWK Set with public keys only. */
  @Prop({ type: String, required: false })
  jwks?: string;

  @Prop({ type: String, required: false })
  jwksUrl?: string;

  @Prop({ type: Date, required: true })
  updated!: Date;
}

export const ClientJwksSchema = SchemaFactory.createForClass(ClientJwksDoc);

/**
 * `jti` values of accepted client assertions (`${client_id}|${jti}`): a unique insert makes each
 * assertion usable once, also under concurrency (the first insert wins). Rows expire with the
 * assertion (TTL index declared here: DocumentDB cannot collMod an index into a TTL index).
 */
@Schema({ collection: 'client_assertion_jtis', versionKey: false })
export class AssertionJtiDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;
}

export const AssertionJtiSchema = SchemaFactory.createForClass(AssertionJtiDoc);
AssertionJtiSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });
