/// `1 attempt`, `2 attempts`: a count and its noun, for messages.
///
/// - Parameter plural: The plural when it is not `noun` + `s`.
package func counted(_ count: Int, _ noun: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
}
