import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

/**
 * A service user (docs/api.md §3). `_id` is the numeric service_user_id (system-wide, increasing,
 * never reused); `c` the owning client (the tenant field, as in docs/storage.md).
 */
@Schema({ collection: 'users', versionKey: false })
export class UserDoc {
  @Prop({ type: Number, required: true })
  _id!: number;

  @Prop({ type: String, required: true })
  c!: string;

  @Prop({ type: String, required: true })
  app_user_id!: string;

  @Prop({ type: Boolean, default: true })
  active!: boolean;

  @Prop({ type: Date, required: true })
  created!: Date;

  /** scrypt hash of the member's sign-in secret (SMART App Launch built-in sign-in); set by the plan. */
  @Prop({ type: String, required: false })
  sign_in_hash?: string;
}

export const UserSchema = SchemaFactory.createForClass(UserDoc);
// One app_user_id per client, also under concurrent creates (docs/api.md §3 "this user already exists").
UserSchema.index({ c: 1, app_user_id: 1 }, { unique: true });

/** Atomic sequence counters (`findOneAndUpdate` + `$inc` + upsert). */
@Schema({ collection: 'counters', versionKey: false })
export class CounterDoc {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: Number, required: true })
  seq!: number;
}

export const CounterSchema = SchemaFactory.createForClass(CounterDoc);

export interface UserRecord {
  service_user_id: number;
  app_user_id: string;
  client_id: string;
  active: boolean;
  created: Date;
}
