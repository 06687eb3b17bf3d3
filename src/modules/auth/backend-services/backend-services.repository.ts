import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { AssertionJtiDoc, ClientJwksDoc } from './backend-services.schemas';
import { isDuplicateKey } from '../../../storage/duplicate-key';

/** The only code touching `client_jwks` and `client_assertion_jtis` (keyed by client_id). */
@Injectable()
export class BackendServicesRepository {
  constructor(
    @InjectModel(ClientJwksDoc.name) private readonly keys: Model<ClientJwksDoc>,
    @InjectModel(AssertionJtiDoc.name) private readonly jtis: Model<AssertionJtiDoc>,
  ) {}

  async setKeys(clientId: string, source: { jwks: string } | { jwksUrl: string }): Promise<void> {
    const unset = 'jwks' in source ? { jwksUrl: '' } : { jwks: '' };
    await this.keys
      .updateOne(
        { _id: clientId },
        { $set: { ...source, updated: new Date() }, $unset: unset },
        { upsert: true },
      )
      .exec();
  }

  async findKeys(clientId: string): Promise<ClientJwksDoc | null> {
    return this.keys.findOne({ _id: clientId }).lean().exec();
  }

  /** Whether this jti was recorded (a cheap look before any key is fetched; useJti decides). */
  async jtiUsed(clientId: string, jti: string): Promise<boolean> {
    return (await this.jtis.exists({ _id: `${clientId}|${jti}` }).exec()) !== null;
  }

  /** Records a jti; false when it was recorded before (a replayed assertion). */
  async useJti(clientId: string, jti: string, expiresAt: Date): Promise<boolean> {
    try {
      await this.jtis.create({ _id: `${clientId}|${jti}`, expiresAt });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }
}
