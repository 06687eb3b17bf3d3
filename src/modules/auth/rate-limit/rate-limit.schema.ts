import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

/**
 * One fixed-window counter: `_id` = `${bucket}|${clientId}|${windowStart}`, incremented with an
 * upserting `$inc` (a single-document atomic update).
 */
@Schema({ collection: 'rate_limits', versionKey: false })
export class RateLimitDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: Number, required: true })
  n!: number;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;
}

export const RateLimitSchema = SchemaFactory.createForClass(RateLimitDoc);
// Expired windows are deleted by the engine (TTL index).
RateLimitSchema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });
