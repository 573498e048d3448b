import GNSS
import StateView
import Testing

@testable import AgrirouterWire

@Suite("the words for a fix")
struct FixWordsTests {
    @Test("every status agrirouter defines and every state of ours has words, none of them a code")
    func noCodes() {
        let codes = GPSEntry.PositionStatus.allCases.map {
            GPSEntry.PositionStatus.description(ofAgrirouterName: $0.agrirouterName)
        }
        let states =
            FixQuality.allCases.map { FixState.fix(.threeD, $0) } + [.noFix, .noReceiver(.noDevice), .gpsdUnreachable]
        let words = codes.map(FixWords.words(forCode:)) + states.map(FixWords.words)
        for word in words {
            #expect(!word.contains("_") && word.uppercased() != word || word == "GPS" || word == "DGPS", "\(word)")
        }
        #expect(FixWords.words(forCode: "rtk_fixed") == FixWords.words(.fix(.twoD, .rtkFixed)))
        #expect(FixWords.words(forCode: "autonomous") == "GPS" && FixWords.words(.fix(.threeD, .dgps)) == "DGPS")
        #expect(
            FixWords.words(forCode: "something_new") == "something_new", "a code we do not know is shown as it came")
    }
}
