import { Injectable } from '@nestjs/common';
import { FhirVersion, OperationOutcomeError, patientCompartmentParams } from '@app/fhir';
import { TenantContext } from '../../tenancy/tenant-context';
import { ExportKind, PlannedFile } from './export-jobs.repository';
import { ExportResourcesRepository, TypeSelection } from './export-resources.repository';
import { groupPatientIds } from './group-members';

/** What one export covers, before it is split into files. */
export interface ExportScope {
  v: FhirVersion;
  kind: ExportKind;
  groupId: string | null;
  types: string[] | null;
  since: Date | null;
  /** `patient` parameter of a Patient/Group export: only these patients (ids), or null. */
  patients?: string[] | null;
  transactionTime: Date;
}

export interface ExportPlan {
  files: PlannedFile[];
  /** Group export: the Group version whose members were used (checked again on download). */
  group: { id: string; vid: number } | null;
}

/** The Patient compartment: a Patient's own record plus resources that reference it. */
function inPatientCompartment(v: FhirVersion, type: string): boolean {
  return type === 'Patient' || patientCompartmentParams(v, type).length > 0;
}

/**
 * Turns an export request into files (type + key range + count) without reading a resource:
 * the types come from a distinct over the index, counts and boundaries from covered index scans.
 */
@Injectable()
export class ExportPlanner {
  constructor(private readonly resources: ExportResourcesRepository) {}

  /** The patients of a tenant's Group (404 when the tenant has no such live Group). */
  async groupMembers(
    ctx: TenantContext,
    v: FhirVersion,
    groupId: string,
  ): Promise<{ vid: number; patientIds: string[] }> {
    const group = await this.resources.findGroup(ctx, v, groupId);
    if (!group) throw OperationOutcomeError.notFound(`Group/${groupId} is not known`);
    return { vid: group.vid, patientIds: groupPatientIds(group.json) };
  }

  /** The selection of one type; the compartment of a Group's patients when given. */
  selection(scope: ExportScope, type: string, patientIds?: readonly string[]): TypeSelection {
    const selection: TypeSelection = {
      v: scope.v,
      t: type,
      since: scope.since,
      transactionTime: scope.transactionTime,
    };
    if (patientIds) selection.compartment = { patientIds, params: patientCompartmentParams(scope.v, type) };
    return selection;
  }

  /** The `patient` parameter narrows a Patient export to those patients, a Group's to its members among them. */
  patientsOf(scope: Pick<ExportScope, 'patients'>, members: string[] | undefined): string[] | undefined {
    if (!scope.patients) return members;
    const asked = new Set(scope.patients);
    return members ? members.filter((id) => asked.has(id)) : [...asked];
  }

  /** `signal`: a background run stops at the next query once its job is no longer its own. */
  async plan(
    ctx: TenantContext,
    scope: ExportScope,
    perFile: number,
    signal?: AbortSignal,
  ): Promise<ExportPlan> {
    let group: ExportPlan['group'] = null;
    let patientIds: string[] | undefined;
    if (scope.kind === 'group') {
      const members = await this.groupMembers(ctx, scope.v, scope.groupId!);
      group = { id: scope.groupId!, vid: members.vid };
      patientIds = members.patientIds;
    }
    patientIds = this.patientsOf(scope, patientIds);
    if (patientIds?.length === 0) return { files: [], group };
    const wanted = scope.types ? new Set(scope.types) : null;
    const selected = (type: string) =>
      (!wanted || wanted.has(type)) && (scope.kind === 'system' || inPatientCompartment(scope.v, type));
    const files: PlannedFile[] = [];
    const types = (await this.resources.typesWithData(ctx, scope.v)).filter(selected);
    for (const type of types) {
      const selection = this.selection(scope, type, patientIds);
      const ranges = await this.resources.keyRanges(ctx, selection, perFile, signal);
      for (const range of ranges) files.push({ type, ...range });
    }
    return { files, group };
  }
}
