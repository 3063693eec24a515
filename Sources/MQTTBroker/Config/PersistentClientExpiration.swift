/// mosquitto's `persistent_client_expiration` value: a number and a unit, `h` (hours), `d` (days), `w` (weeks),
/// `m` (months of 30 days) or `y` (years of 365 days), e.g. `14d`.
enum PersistentClientExpiration {
    static func seconds(_ value: String, line: ConfigLine) throws(BrokerConfigError) -> UInt32 {
        let units: [Character: UInt64] = ["h": 3_600, "d": 86_400, "w": 604_800, "m": 2_592_000, "y": 31_536_000]
        guard let unit = value.last, let multiplier = units[unit], let count = UInt64(value.dropLast()), count > 0
        else {
            throw line.invalid(value, expected: "a duration such as 2h, 14d, 1w, 3m or 1y")
        }
        let (seconds, overflow) = count.multipliedReportingOverflow(by: multiplier)
        guard !overflow, seconds < UInt64(UInt32.max) else {
            throw line.invalid(value, expected: "a duration below 136 years")
        }
        return UInt32(seconds)
    }
}
