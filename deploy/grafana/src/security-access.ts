// Security and access (Loki): who logs in, from where, and how logins fail, from the Login
// EventLogFile (hourly/daily) and the real-time LoginEventStream, and what Threat Detection flagged.
// Field names are the Salesforce ones sf2loki ships unchanged in each JSON line.
import { RowBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import type { DashboardBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import { logs, sf2lokiDashboard, STREAM, table, timeseries } from "./panels.ts";

const ELF_LOGIN = `{${STREAM}, source="eventlogfile", event_type="Login"}`;
const RT_LOGIN = `{${STREAM}, source="pubsub", event_type="LoginEventStream"}`;
/**
 * Every Threat Detection event, streamed (`<X>Event`, source pubsub) or polled (`<X>EventStore`,
 * source eventlog_objects): all of them carry Score, Username and Summary. An org ingests each
 * category from one source (the overlap guard), so nothing here counts twice.
 */
export const THREAT_EVENT_TYPES =
  "(Api|Login|Report|Universal)AnomalyEvent(Store)?|(CredentialStuffing|SessionHijacking)Event(Store)?";
const THREAT = `{${STREAM}, event_type=~"${THREAT_EVENT_TYPES}"}`;
const UNIVERSAL = `{${STREAM}, event_type=~"UniversalAnomalyEvent(Store)?"}`;
/** Salesforce's Score runs from 0 to 100; the Sf2lokiThreatDetectionHighScore alert's threshold. */
const HIGH_SCORE = 90;

export function securityAccess(): DashboardBuilder {
  return sf2lokiDashboard(
    "sf2loki-security-access",
    "sf2loki / Security and access",
    "Logins by status and country, failed logins, TLS protocols (Login EventLogFile and LoginEventStream).",
    ["loki"],
  )
    .withRow(new RowBuilder("Real-time logins (LoginEventStream)"))
    .withPanel(
      timeseries("loki", "Logins by status", "LoginEventStream events by Status.", "short", [
        {
          expr: `sum by (Status) (count_over_time(${RT_LOGIN} | json | __error__="" [$__auto]))`,
          legend: "{{Status}}",
        },
      ]),
    )
    .withPanel(
      timeseries("loki", "Logins by country", "LoginEventStream events by CountryIso (top 10).", "short", [
        {
          expr: `topk(10, sum by (CountryIso) (count_over_time(${RT_LOGIN} | json | __error__="" [$__auto])))`,
          legend: "{{CountryIso}}",
        },
      ]),
    )
    .withPanel(
      table(
        "loki",
        "Failed logins by user and source IP",
        "LoginEventStream events whose Status is not Success, over the dashboard range.",
        `topk(20, sum by (Username, SourceIp, Status) (count_over_time(${RT_LOGIN} | json | Status != "Success" [$__range])))`,
      ),
    )
    .withPanel(
      table(
        "loki",
        "Logins by login type and application",
        "LoginEventStream events over the dashboard range.",
        `topk(20, sum by (LoginType, Application) (count_over_time(${RT_LOGIN} | json | __error__="" [$__range])))`,
      ),
    )
    .withRow(new RowBuilder("Threat Detection"))
    .withPanel(
      timeseries(
        "loki",
        "Anomaly events by type",
        "Threat Detection events (Api/Login/Report/Universal anomalies, credential stuffing, session hijacking) by event type, streamed or polled.",
        "short",
        [
          {
            expr: `sum by (event_type) (count_over_time(${THREAT} [$__auto]))`,
            legend: "{{event_type}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "loki",
        "Universal anomalies by subtype",
        "UniversalAnomalyEvent (API v66) by AnomalySubType: the one schema every newer detector reports in.",
        "short",
        [
          {
            expr: `sum by (AnomalySubType) (count_over_time(${UNIVERSAL} | json | __error__="" [$__auto]))`,
            legend: "{{AnomalySubType}}",
          },
        ],
      ),
    )
    .withPanel(
      table(
        "loki",
        "Users with high-score anomalies",
        `Threat Detection events with Score >= ${HIGH_SCORE} (of 100) over the dashboard range, by user, event type and subtype.`,
        `topk(20, sum by (Username, event_type, AnomalySubType) (count_over_time(${THREAT} | json | __error__="" | Score >= ${HIGH_SCORE} [$__range])))`,
      ),
    )
    .withPanel(
      table(
        "loki",
        "Source IPs of high-score anomalies",
        `Threat Detection events with Score >= ${HIGH_SCORE} over the dashboard range, by SourceIp and event type: one address behind several users is an attack, not a user.`,
        `topk(20, sum by (SourceIp, event_type) (count_over_time(${THREAT} | json | __error__="" | Score >= ${HIGH_SCORE} [$__range])))`,
      ),
    )
    .withPanel(
      logs(
        "Newest anomaly events",
        "Raw Threat Detection lines, newest first: Summary and SecurityEventData say what the model saw.",
        `${THREAT} | json | __error__=""`,
      ),
    )
    .withRow(new RowBuilder("Login EventLogFile"))
    .withPanel(
      timeseries("loki", "ELF logins by status", "Login EventLogFile rows by LOGIN_STATUS.", "short", [
        {
          expr: `sum by (LOGIN_STATUS) (count_over_time(${ELF_LOGIN} | json | __error__="" [$__auto]))`,
          legend: "{{LOGIN_STATUS}}",
        },
      ]),
    )
    .withPanel(
      timeseries("loki", "ELF logins by TLS protocol", "Login EventLogFile rows by TLS_PROTOCOL.", "short", [
        {
          expr: `sum by (TLS_PROTOCOL) (count_over_time(${ELF_LOGIN} | json | __error__="" [$__auto]))`,
          legend: "{{TLS_PROTOCOL}}",
        },
      ]),
    )
    .withPanel(
      // The Login file has no country column (LoginEventStream's CountryIso is the real-time one):
      // a failed login is told apart by where it came from and whom it tried.
      table(
        "loki",
        "ELF failed logins by client IP and user",
        "Login EventLogFile rows whose LOGIN_STATUS is not LOGIN_NO_ERROR, by CLIENT_IP and USER_NAME.",
        `topk(20, sum by (CLIENT_IP, USER_NAME, LOGIN_STATUS) (count_over_time(${ELF_LOGIN} | json | LOGIN_STATUS != "LOGIN_NO_ERROR" [$__range])))`,
      ),
    )
    .withPanel(
      logs(
        "Recent failed logins",
        "Raw LoginEventStream lines whose Status is not Success.",
        `${RT_LOGIN} | json | Status != "Success"`,
      ),
    );
}
