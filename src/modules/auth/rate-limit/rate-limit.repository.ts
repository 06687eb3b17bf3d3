import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { RateLimitDoc } from './rate-limit.schema';
import { isDuplicateKey } from '../../../storage/duplicate-key';

/** The only code touching `rate_limits`. Keys already carry the client id. */
@Injectable()
export class RateLimitRepository {
  constructor(@InjectModel(RateLimitDoc.name) private readonly model: Model<RateLimitDoc>) {}

  /** Adds one to the window's counter (creating it) and returns the new count. */
  async increment(key: string, expiresAt: Date): Promise<number> {
    try {
      return await this.incrementOnce(key, expiresAt);
    } catch (e) {
      // Two first hits of a window may both try the upsert; the loser retries as an update.
      if (!isDuplicateKey(e)) throw e;
      return this.incrementOnce(key, expiresAt);
    }
  }

  /** Gives back one count (an attempt that reserved it succeeded). */
  async decrement(key: string): Promise<void> {
    await this.model.updateOne({ _id: key, n: { $gt: 0 } }, { $inc: { n: -1 } }).exec();
  }

  private async incrementOnce(key: string, expiresAt: Date): Promise<number> {
    const doc = await this.model
      .findOneAndUpdate(
        { _id: key },
        { $inc: { n: 1 }, $setOnInsert: { expiresAt } },
        { upsert: true, new: true },
      )
      .lean()
      .exec();
    return doc.n;
  }
}
