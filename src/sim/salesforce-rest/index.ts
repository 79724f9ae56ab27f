// The REST side of the simulated Salesforce org.
export { createSimRest, type SimRestHandler, type SimRestOptions, type SimRestStats } from "./handler.ts";
export { startSimRest, type SimRestServer } from "./server.ts";
export {
  elfFile,
  sfDatetime,
  simId,
  type SimApexLog,
  type SimData,
  type SimEventLogFile,
  type SimLimit,
  type SimRecord,
} from "./data.ts";
export {
  addPollingData,
  appendApexLogs,
  appendElfFile,
  appendObjectRecords,
  objectIdPrefix,
  simApexLog,
  type SimPollingData,
} from "./generate.ts";
export { ELF_COLUMNS, rowCells, type RowCustomizer } from "./elf-csv.ts";
export { SimFaults, type FaultKind, type FaultRoute, type FaultRule } from "./faults.ts";
