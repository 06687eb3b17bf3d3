/** The part of @lhncbc/ucum-lhc (which ships no types) used here. */
declare module '@lhncbc/ucum-lhc' {
  export class UcumLhcUtils {
    static getInstance(): UcumLhcUtils;
    validateUnitString(
      unit: string,
      suggest?: boolean,
    ): { status: 'valid' | 'invalid' | 'error'; msg: string[] };
  }
}
