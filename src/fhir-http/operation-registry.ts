import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import {
  FHIR_OPERATION,
  type FhirOperationDefinition,
  type OperationLevel,
} from './fhir-operation-definition';

/** One operation at one level, as the CapabilityStatement lists it. */
export interface RegisteredOperation {
  name: string;
  level: OperationLevel;
  /** Resource types at type/instance level; undefined = every type; [] at system level. */
  types?: readonly string[];
  definition?: string;
  description: string;
  affectsState: boolean;
}

/**
 * The FHIR operations this server serves: every handler declared with `@FhirOperation()`, found
 * through Nest's DiscoveryService once the modules are loaded. Nothing is listed by hand.
 */
@Injectable()
export class OperationRegistry implements OnModuleInit {
  private operations: RegisteredOperation[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    const found = new Map<string, RegisteredOperation>();
    for (const wrapper of this.discovery.getControllers()) {
      const prototype = (wrapper.metatype as { prototype?: object } | null)?.prototype;
      if (!prototype) continue;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = (prototype as Record<string, unknown>)[name];
        if (typeof handler !== 'function') continue;
        const def = Reflect.getOwnMetadata(FHIR_OPERATION, handler) as FhirOperationDefinition | undefined;
        if (!def) continue;
        for (const level of def.levels) {
          const at = def.at?.[level];
          const op: RegisteredOperation = {
            name: def.name,
            level,
            types: level === 'system' ? [] : (at?.types ?? def.types),
            definition: at?.definition ?? def.definition,
            description: def.description,
            affectsState: def.affectsState === true,
          };
          found.set(`${op.name} ${level} ${op.definition ?? ''}`, op);
        }
      }
    }
    this.operations = [...found.values()].sort(
      (a, b) => a.name.localeCompare(b.name) || a.level.localeCompare(b.level),
    );
  }

  list(): readonly RegisteredOperation[] {
    return this.operations;
  }
}
