import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';
import type { MemberSignInDoc, MemberSignInView } from '../member-federation/member-sign-in';

/** Programs a client may enable (the operator CLI; docs/api.md §4). */
export const PROGRAMS = ['patient-access', 'epa', 'provider-access', 'p2p'] as const;
export type Program = (typeof PROGRAMS)[number];

/** A client application (docs/api.md §2). `_id` is the client_id: lookups are `_id` equality. */
@Schema({ collection: 'clients', versionKey: false })
export class ClientDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  /** Hash of the client secret (a SHA-256 digest, or scrypt for older ones: secret-hash.ts); the plain secret is shown once. Absent: a public app. */
  @Prop({ type: String, required: false })
  secret_hash?: string;

  @Prop({ type: String, required: true })
  name!: string;

  /** Slug naming the population-level export path `/v1/<customer>/...`; unique. */
  @Prop({ type: String, required: true })
  customer!: string;

  @Prop({ type: [String], default: [] })
  programs!: Program[];

  @Prop({ type: Boolean, default: false })
  disabled!: boolean;

  @Prop({ type: Date, required: true })
  created!: Date;

  /** A health plan: how its members sign in for SMART App Launch; absent: the built-in sign-in. */
  @Prop({ type: Object, required: false })
  member_sign_in?: MemberSignInDoc;

  /** A SMART app: the redirect URIs it registered (exact match at authorize). */
  @Prop({ type: [String], required: false, default: undefined })
  redirect_uris?: string[];

  /** A SMART app: the client_id of the health plan whose members it serves. */
  @Prop({ type: String, required: false })
  plan?: string;

  /** A health plan: the name and logo (a data: URI) its members see on the sign-in and consent pages. */
  @Prop({ type: String, required: false })
  plan_name?: string;

  @Prop({ type: String, required: false })
  plan_logo?: string;
}

export const ClientSchema = SchemaFactory.createForClass(ClientDoc);
ClientSchema.index({ customer: 1 }, { unique: true });

/** What other modules see of a client: never the hash. */
export interface ClientRecord {
  clientId: string;
  name: string;
  customer: string;
  programs: Program[];
  disabled: boolean;
  created: Date;
  /** How the client's members sign in when it is a health plan (no secret of the provider here). */
  memberSignIn: MemberSignInView;
  /** Set on a SMART app (a client registered with redirect URIs for a plan's members). */
  app?: SmartAppRegistration;
  /** What a plan shows its members (plan name/logo); absent: the client's name, no logo. */
  branding?: { name?: string; logo?: string };
}

export interface SmartAppRegistration {
  redirectUris: string[];
  /** client_id of the plan whose members the app serves. */
  plan: string;
  /** No secret: runs in a browser or on a device; must use PKCE. */
  public: boolean;
}
