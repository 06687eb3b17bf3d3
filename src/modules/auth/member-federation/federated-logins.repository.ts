import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { FederatedLoginDoc } from './federated-login.schema';

/** The only code touching `member_federated_logins` (keyed by the state's hash, not by tenant). */
@Injectable()
export class FederatedLoginsRepository {
  constructor(@InjectModel(FederatedLoginDoc.name) private readonly model: Model<FederatedLoginDoc>) {}

  async insert(login: FederatedLoginDoc): Promise<void> {
    await this.model.create(login);
  }

  /** Removes and returns the unexpired login with this key; of racing callbacks one gets it. */
  take(key: string): Promise<FederatedLoginDoc | null> {
    return this.model
      .findOneAndDelete({ _id: key, expiresAt: { $gt: new Date() } })
      .lean()
      .exec();
  }
}
