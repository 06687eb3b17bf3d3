import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { MemberSignInDoc, viewOfMemberSignIn } from '../member-federation/member-sign-in';
import { ClientDoc, ClientRecord } from './client.schema';

/**
 * The only code touching the `clients` collection. Clients are the tenants themselves, so these
 * lookups are by client_id (`_id`), not through a TenantContext.
 */
@Injectable()
export class ClientsRepository {
  constructor(@InjectModel(ClientDoc.name) private readonly model: Model<ClientDoc>) {}

  async insert(doc: ClientDoc): Promise<void> {
    await this.model.create(doc);
  }

  async findWithHash(clientId: string): Promise<(ClientRecord & { secretHash?: string }) | null> {
    const doc = await this.model.findOne({ _id: clientId }).lean().exec();
    return doc ? { ...toRecord(doc), secretHash: doc.secret_hash } : null;
  }

  async customerTaken(customer: string): Promise<boolean> {
    return (await this.model.countDocuments({ customer }).exec()) > 0;
  }

  async findByCustomer(customer: string): Promise<ClientRecord | null> {
    const doc = await this.model.findOne({ customer }).lean().exec();
    return doc ? toRecord(doc) : null;
  }

  async list(): Promise<ClientRecord[]> {
    const docs = await this.model.find({}).sort({ created: 1 }).lean().exec();
    return docs.map(toRecord);
  }

  async setSecretHash(clientId: string, secretHash: string): Promise<boolean> {
    const r = await this.model.updateOne({ _id: clientId }, { $set: { secret_hash: secretHash } }).exec();
    return r.matchedCount === 1;
  }

  /**
   * Replaces the hash only while it is still `current`: a rotate-secret written meanwhile wins, so
   * rewriting a verified secret's hash never brings back a secret the operator replaced.
   */
  async replaceSecretHash(clientId: string, current: string, secretHash: string): Promise<boolean> {
    const r = await this.model
      .updateOne({ _id: clientId, secret_hash: current }, { $set: { secret_hash: secretHash } })
      .exec();
    return r.matchedCount === 1;
  }

  async setMemberSignIn(clientId: string, signIn: MemberSignInDoc): Promise<boolean> {
    const r = await this.model.updateOne({ _id: clientId }, { $set: { member_sign_in: signIn } }).exec();
    return r.matchedCount === 1;
  }

  /** The plan's sign-in settings with the provider's client secret (federation only); null: no client. */
  async findMemberSignIn(clientId: string): Promise<MemberSignInDoc | null> {
    const doc = await this.model.findOne({ _id: clientId }, { member_sign_in: 1 }).lean().exec();
    return doc ? (doc.member_sign_in ?? { mode: 'builtin' }) : null;
  }

  /** A SMART app's redirect URIs; false when no such app. */
  async setRedirectUris(clientId: string, uris: string[]): Promise<boolean> {
    const r = await this.model
      .updateOne({ _id: clientId, plan: { $exists: true } }, { $set: { redirect_uris: uris } })
      .exec();
    return r.matchedCount === 1;
  }

  async setBranding(clientId: string, branding: { name?: string; logo?: string }): Promise<boolean> {
    const set: Record<string, string> = {};
    if (branding.name !== undefined) set.plan_name = branding.name;
    if (branding.logo !== undefined) set.plan_logo = branding.logo;
    const r = await this.model.updateOne({ _id: clientId }, { $set: set }).exec();
    return r.matchedCount === 1;
  }

  /** Every registered redirect URI of the enabled SMART apps (browser origins allowed by CORS). */
  async appRedirectUris(): Promise<string[]> {
    const docs = await this.model
      .find({ plan: { $exists: true }, disabled: { $ne: true } }, { redirect_uris: 1 })
      .lean()
      .exec();
    return docs.flatMap((d) => d.redirect_uris ?? []);
  }

  async setDisabled(clientId: string, disabled: boolean): Promise<boolean> {
    const r = await this.model.updateOne({ _id: clientId }, { $set: { disabled } }).exec();
    return r.matchedCount === 1;
  }
}

function toRecord(doc: ClientDoc): ClientRecord {
  return {
    clientId: doc._id,
    name: doc.name,
    customer: doc.customer,
    programs: doc.programs ?? [],
    disabled: doc.disabled === true,
    created: doc.created,
    memberSignIn: viewOfMemberSignIn(doc.member_sign_in),
    ...(doc.plan
      ? { app: { redirectUris: doc.redirect_uris ?? [], plan: doc.plan, public: !doc.secret_hash } }
      : {}),
    ...(doc.plan_name || doc.plan_logo ? { branding: { name: doc.plan_name, logo: doc.plan_logo } } : {}),
  };
}
