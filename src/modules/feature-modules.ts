import type { Type } from '@nestjs/common';

/**
 * The feature modules of the service (DESIGN.md §2). Each feature adds its module here in one
 * line; AppModule and the CLI context both load this list.
 */
export const FEATURE_MODULES: Type[] = [];
